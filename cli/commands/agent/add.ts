import { join } from 'node:path';
import { formatPrincipal } from '../../format-todos.js';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { principalNameArg, queueFlag } from '../../name-flags.js';

export default class AgentAdd extends SwitchboardCommand {
  static override summary = 'Vend an agent: a name, its queues, and a token shown once';
  static override description =
    'The agent belongs to you (its owner: approvals it asks for come to you). Prints its token — shown this once, keep it — and a ready .mcp.json for Claude Code: the HTTP MCP endpoint, and the `switchboard channel` server that wakes a live session.';
  static override examples = [
    '<%= config.bin %> agent add reviewer --queue reviews',
    '<%= config.bin %> agent add ci-bot --queue ci --queue issues --json',
  ];
  static override enableJsonFlag = true;
  static override args = {
    name: principalNameArg({
      required: true,
      description: 'lowercase name, unique among agents and humans',
    }),
  };
  static override flags = {
    queue: queueFlag({
      required: true,
      multiple: true,
      description: 'a queue it works (repeat for more)',
    }),
  };

  async run() {
    const { args, flags } = await this.parse(AgentAdd);
    const client = await this.client();
    const { agent, token } = await client.addAgent(args.name, flags.queue);
    const mcp_json = mcpJson(client.url, token, join(this.config.root, 'bin', 'run.js'));
    this.log(`added ${formatPrincipal(agent)}`);
    this.log(`\ntoken (shown once — keep it): ${token}`);
    this.log(
      `\n.mcp.json for Claude Code — keep the entry you use: "switchboard" (the channel: wakes a live session) or "switchboard-http" (MCP over HTTP):\n${JSON.stringify(mcp_json, null, 2)}`,
    );
    this.log(
      '\nThe channel needs Claude Code started with --dangerously-load-development-channels=server:switchboard.',
    );
    return { agent, token, mcp_json };
  }
}

/**
 * Both ways in (CHANNELS.md, "Registering it"): `switchboard` is the stdio channel server, which
 * pushes wakes into a live session and must carry that name; `switchboard-http` is the same tools
 * over Streamable HTTP, for any MCP client.
 *
 * The channel is this installation's own switchboard, by absolute path: this Node and this
 * package's bin script. So it starts from any project directory, and never by a package name —
 * `npx switchboard` outside the checkout asks the npm registry, which would run whatever package
 * is published under that name, with the agent's token in its environment.
 */
function mcpJson(url: string, token: string, bin: string) {
  return {
    mcpServers: {
      switchboard: {
        command: process.execPath,
        args: [bin, 'channel'],
        env: { SWITCHBOARD_URL: url, SWITCHBOARD_TOKEN: token },
      },
      'switchboard-http': {
        type: 'http',
        url: `${url}/mcp`,
        headers: { Authorization: `Bearer ${token}` },
      },
    },
  };
}

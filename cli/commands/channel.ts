import { CommandError, EXIT } from '../command-error.js';
import { SwitchboardCommand } from '../switchboard-command.js';

export default class Channel extends SwitchboardCommand {
  static override summary = 'Run the stdio MCP channel server that Claude Code starts';
  static override description = [
    'Speaks MCP on stdin/stdout to Claude Code: offers the switchboard tools, pushes a',
    '<channel source="switchboard"> event into the session when a todo waits for this agent, and',
    "relays Claude Code's permission prompts to the agent's human as approval todos.",
    'Credentials: SWITCHBOARD_URL and SWITCHBOARD_TOKEN (usually set in .mcp.json), else the',
    'credentials file. SWITCHBOARD_APPROVAL_TTL sets how long a relayed prompt waits for a human',
    '(seconds, default 900). Logs go to stderr; it exits when stdin closes.',
  ].join('\n');
  static override examples = [
    '<%= config.bin %> channel',
    'SWITCHBOARD_URL=http://127.0.0.1:3000 SWITCHBOARD_TOKEN=sbk_… <%= config.bin %> channel',
  ];

  async run() {
    await this.parse(Channel);
    const { url, token } = await this.credentials();
    const ttl = Number(process.env.SWITCHBOARD_APPROVAL_TTL || 900);
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > 604_800) {
      throw new CommandError(
        'SWITCHBOARD_APPROVAL_TTL must be a whole number of seconds from 1 to 604800',
        EXIT.usage,
      );
    }
    const [{ runChannel }, { VERSION }] = await Promise.all([
      import('../../src/channel/run-channel.js'),
      import('../../src/package-root.js'),
    ]);
    await runChannel({
      url,
      token,
      version: VERSION,
      approvalTtlSeconds: ttl,
      log: (message) => process.stderr.write(`switchboard channel: ${message}\n`),
    });
    // Claude Code closed stdin: nothing more to do, whatever sockets are still open.
    process.exit(0);
  }
}

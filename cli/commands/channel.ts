import { defaultCredentialsFile } from '../../src/platform/config/paths.js';
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
    'A token the server refuses at start ends it at once (exit 4, one line on stderr), so that',
    'Claude Code shows it failed; refused later, it is logged and tried again. Started by hand in',
    'a terminal, it says on stderr what it is and whose token it uses.',
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
    const [{ runChannel }, { identifyToken }, { VERSION }] = await Promise.all([
      import('../../src/channel/run-channel.js'),
      import('../../src/channel/identify-token.js'),
      import('../../src/platform/package-root.js'),
    ]);
    const log = (message: string) => process.stderr.write(`switchboard channel: ${message}\n`);
    // The credentials resolve the same way: the environment's token wins over the file's.
    const source = process.env.SWITCHBOARD_TOKEN
      ? 'SWITCHBOARD_TOKEN'
      : `the credentials file (${defaultCredentialsFile()})`;

    const who = await identifyToken(url, token);
    if ('refused' in who) {
      const { status, reason } = who.refused;
      throw new CommandError(
        `switchboard channel: ${url} refused the token from ${source} (HTTP ${status}: ${reason}) — ` +
          (source === 'SWITCHBOARD_TOKEN'
            ? "give it an agent's token in .mcp.json ('switchboard agent add NAME --queue Q' prints one)"
            : `run 'switchboard login --url ${url} --token …'`),
        EXIT.unreachable,
      );
    }

    // Claude Code starts it with pipes; a terminal means a person started it by hand.
    if (process.stdin.isTTY) {
      log(
        'a stdio MCP server for Claude Code, meant to be started by it (an .mcp.json entry), not by ' +
          'hand: it reads JSON-RPC on stdin and writes nothing but JSON-RPC on stdout. Ctrl-D ends it.',
      );
      log(
        'owner' in who
          ? `it acts as ${who.owner.kind} '${who.owner.name}' at ${url}, with the token from ${source}` +
              (who.owner.kind === 'human'
                ? " — a human's: Claude Code should get an agent's token ('switchboard agent add NAME --queue Q')"
                : '')
          : `it uses the token from ${source} for ${url}; whose, the server will say: ${who.unknown}`,
      );
    }

    await runChannel({
      url,
      token,
      version: VERSION,
      approvalTtlSeconds: ttl,
      log,
    });
    // Claude Code closed stdin: nothing more to do, whatever sockets are still open.
    process.exit(0);
  }
}

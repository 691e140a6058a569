import { spawn } from 'node:child_process';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';
import { requireTool } from '../support/require-tool.js';
import { hasTmux, startInTmux } from '../cli/support/tmux.js';
import { BIN, startClaudeCode, type ClaudeCode } from '../support/claude-code-client.js';
import { runMark } from '../support/leftover-processes.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// What the channel says about its token before Claude Code (or a person) relies on it.

requireTool('tmux', await hasTmux(), 'apt-get install -y tmux');

let server: TestServer;
let human: string;

beforeAll(async () => {
  server = await startTestServer();
  human = (await server.api(server.adminToken, 'POST', '/humans', { name: 'bob' })).body.token;
});
afterAll(() => server.stop());

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: {
    protocolVersion: '2025-06-18',
    capabilities: { roots: {}, elicitation: {} },
    clientInfo: { name: 'claude-code', version: '2.1.81' },
  },
};

test('regression: with a refused token the channel answered the handshake (shown connected) and retried the 401 forever', async () => {
  // As Claude Code starts it: pipes, and an initialize request at once.
  const child = spawn(process.execPath, [BIN, 'channel'], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...runMark(),
      SWITCHBOARD_URL: server.url,
      SWITCHBOARD_TOKEN: 'sbk_revoked-or-mistyped',
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.on('error', () => {});
  child.stdin.write(`${JSON.stringify(INITIALIZE)}\n`);
  // Whichever comes first: an answer on stdout (Claude Code would list it as connected), or the end.
  const outcome = await new Promise<string | number | null>((resolve) => {
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
      resolve('answered the handshake');
    });
    child.once('close', (code) => resolve(code));
  });
  child.kill('SIGKILL');
  expect(outcome).toBe(4);
  expect(stdout).toBe('');
  expect(stderr.trimEnd().split('\n')).toEqual([
    `switchboard channel: ${server.url} refused the token from SWITCHBOARD_TOKEN (HTTP 401: token is invalid or revoked) — give it an agent's token in .mcp.json ('switchboard agent add NAME --queue Q' prints one)`,
  ]);
});

test('regression: a token refused after a restart was told to the session as "cannot reach"; it is logged and tried again, the channel stays up', async () => {
  const { body } = await server.api(human, 'POST', '/agents', {
    name: 'later',
    queues: ['later'],
  });
  // The channel's server is a second process on the same database, restarted after the revoke.
  const port = await freePort();
  let current: TestServer | undefined = await startTestServer({ schema: server.schema, port });
  let claude: ClaudeCode | undefined;
  try {
    claude = await startClaudeCode({ SWITCHBOARD_URL: current.url, SWITCHBOARD_TOKEN: body.token });
    // Pipes, not a terminal: not a word about being started by hand.
    await expect
      .poll(
        async () =>
          (
            await server.sql`select count(*)::int as n from consumer_sessions where principal = 'later'`
          )[0]!.n,
      )
      .toBe(1);
    expect(claude.stderr()).not.toContain('meant to be started by it');

    expect((await server.api(human, 'POST', '/agents/later/revoke')).status).toBe(200);
    await current.stop();
    current = undefined;
    current = await startTestServer({ schema: server.schema, port });

    await expect
      .poll(() => claude!.stderr(), { timeout: 60_000 })
      .toContain(`${current.url} refused this channel's token (HTTP 401); trying again`);
    await expect
      .poll(() => claude!.events.map((event) => event.content))
      .toContainEqual(expect.stringContaining("refused this channel's token (HTTP 401); retrying"));
    // Still there, and its tools say what is wrong.
    const refused = await claude.call('list_todos');
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/refused this channel's token \(HTTP 401\)/);
    expect(claude.errors).toEqual([]);
  } finally {
    await claude?.close();
    await current?.stop();
  }
  // The channel backs off up to 30 s between tries while its server restarts.
}, 90_000);

test("regression: channel run by hand in a terminal printed nothing and quietly used a human's token", async () => {
  const tmux = await startInTmux(['channel'], {
    HOME: process.env.HOME ?? '/tmp',
    ...runMark(),
    SWITCHBOARD_URL: server.url,
    SWITCHBOARD_TOKEN: human,
  });
  try {
    const screen = await tmux.waitFor("it acts as human 'bob'");
    expect(screen.replace(/\n/g, '')).toContain(
      'switchboard channel: a stdio MCP server for Claude Code, meant to be started by it',
    );
    expect(screen.replace(/\n/g, '')).toContain(
      `it acts as human 'bob' at ${server.url}, with the token from SWITCHBOARD_TOKEN — a human's: Claude Code should get an agent's token`,
    );
    // Ctrl-D closes its input, which ends it, as Claude Code going away does.
    await tmux.send(['C-d']);
    await tmux.waitFor('exited 0');
  } finally {
    await tmux.close();
  }
});

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { BIN } from '../support/claude-code-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { runMark } from '../support/leftover-processes.js';

// The wire rules of CHANNELS.md that an SDK client would hide: raw JSON-RPC lines over stdio.

let server: TestServer;
let env: Record<string, string>;

beforeAll(async () => {
  server = await startTestServer();
  const human = (await server.api(server.adminToken, 'POST', '/humans', { name: 'bob' })).body
    .token;
  const agent = (await server.api(human, 'POST', '/agents', { name: 'raw', queues: ['raw'] })).body
    .token;
  // Something already waits, so a digest is due the moment the channel may speak.
  await server.api(human, 'POST', '/todos', { queue: 'raw', title: 'waiting' });
  env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    ...runMark(),
    SWITCHBOARD_URL: server.url,
    SWITCHBOARD_TOKEN: agent,
  };
});
afterAll(() => server.stop());

interface Raw {
  child: ChildProcessWithoutNullStreams;
  lines: any[];
  stdout: () => string;
  send(message: object): void;
  waitFor(match: (line: any) => boolean, ms?: number): Promise<any>;
}

function spawnChannel(extraEnv: Record<string, string> = {}): Raw {
  const child = spawn(process.execPath, [BIN, 'channel'], { env: { ...env, ...extraEnv } });
  let stdout = '';
  const lines: any[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    const complete = stdout.split('\n');
    for (const line of complete.slice(lines.length, complete.length - 1))
      lines.push(JSON.parse(line));
  });
  return {
    child,
    lines,
    stdout: () => stdout,
    send: (message) => child.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...message }) + '\n'),
    async waitFor(match, ms = 10_000) {
      const deadline = Date.now() + ms;
      while (Date.now() < deadline) {
        const found = lines.find(match);
        if (found) return found;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error(`nothing matched; stdout was: ${stdout}`);
    },
  };
}

const initialize = (protocolVersion: string) => ({
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion,
    capabilities: { roots: {}, elicitation: {} },
    clientInfo: { name: 'claude-code', version: '2.1.90' },
  },
});

test('sends nothing before `initialized`, then the digest; stdout is JSON-RPC only', async () => {
  const raw = spawnChannel();
  try {
    raw.send(initialize('2025-06-18'));
    const answer = await raw.waitFor((line) => line.id === 1);
    expect(answer.result.capabilities.experimental).toEqual({
      'claude/channel': {},
      'claude/channel/permission': {},
    });
    await new Promise((resolve) => setTimeout(resolve, 1500)); // plenty of time to misbehave
    expect(raw.lines).toHaveLength(1);
    raw.send({ method: 'notifications/initialized' });
    const digest = await raw.waitFor((line) => line.method === 'notifications/claude/channel');
    expect(digest.params.meta.event).toBe('digest');
    expect(digest).not.toHaveProperty('id'); // a notification: no id, no reply expected
    for (const line of raw.stdout().trim().split('\n'))
      expect(JSON.parse(line).jsonrpc).toBe('2.0');
  } finally {
    raw.child.kill();
  }
});

test('stays on the classic handshake when offered a newer protocol revision, and has no server/discover', async () => {
  const raw = spawnChannel();
  try {
    raw.send(initialize('2026-07-28'));
    const answer = await raw.waitFor((line) => line.id === 1);
    expect(answer.result.protocolVersion).not.toBe('2026-07-28');
    expect(['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']).toContain(
      answer.result.protocolVersion,
    );
    raw.send({ method: 'notifications/initialized' });
    raw.send({ id: 2, method: 'server/discover', params: {} });
    const refused = await raw.waitFor((line) => line.id === 2);
    expect(refused.error.code).toBe(-32601);
  } finally {
    raw.child.kill();
  }
});

test('exits when stdin closes', async () => {
  const raw = spawnChannel();
  raw.send(initialize('2025-06-18'));
  await raw.waitFor((line) => line.id === 1);
  raw.send({ method: 'notifications/initialized' });
  const exited = new Promise<number | null>((resolve) =>
    raw.child.once('exit', (code) => resolve(code)),
  );
  raw.child.stdin.end();
  expect(await exited).toBe(0);
});

test('an unreachable server is said once, without exiting, and tools say what to do', async () => {
  const raw = spawnChannel({ SWITCHBOARD_URL: 'http://127.0.0.1:9' });
  try {
    raw.send(initialize('2025-06-18'));
    await raw.waitFor((line) => line.id === 1);
    raw.send({ method: 'notifications/initialized' });
    const status = await raw.waitFor((line) => line.method === 'notifications/claude/channel');
    expect(status.params).toEqual({
      content:
        'switchboard: cannot reach http://127.0.0.1:9; retrying. Waiting todos stay queued and arrive as a digest when it is back.',
      meta: { event: 'status' },
    });
    raw.send({
      id: 3,
      method: 'tools/call',
      params: { name: 'claim_next', arguments: { queue: 'raw' } },
    });
    const call = await raw.waitFor((line) => line.id === 3);
    expect(call.result.isError).toBe(true);
    expect(call.result.content[0].text).toMatch(/cannot be reached right now; nothing changed/);
    await new Promise((resolve) => setTimeout(resolve, 2500)); // a few retries later…
    expect(raw.lines.filter((line) => line.method === 'notifications/claude/channel')).toHaveLength(
      1,
    );
    expect(raw.child.exitCode).toBeNull();
  } finally {
    raw.child.kill();
  }
});

import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApiClient } from '../../src/client/api-client.js';
import { claimNextWaiting } from '../../src/client/claim-next-waiting.js';
import { ApiError } from '../../src/client/client-errors.js';
import { followEventStream } from '../../src/client/follow-event-stream.js';
import { openWakeStream } from '../../src/client/open-wake-stream.js';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { createCliHome, parseJson, startCli, type CliHome } from './support/run-cli.js';

let server: TestServer;
let home: CliHome;

beforeAll(async () => {
  [server, home] = await Promise.all([startTestServer(), createCliHome()]);
});
afterAll(async () => {
  await server?.stop();
  await home?.remove();
});

const credentials = () => ({ url: server.url, token: server.adminToken });
const createTodo = async (queue: string, title = 'arrived') =>
  (await server.api(server.adminToken, 'POST', '/todos', { queue, title })).body.todo as {
    id: number;
  };

test('todo claim --wait blocks until a todo arrives, then claims it', async () => {
  const waiting = startCli(['todo', 'claim', '--queue', 'wait-q', '--wait', '60', '--json'], {
    ...home.env,
    SWITCHBOARD_URL: server.url,
    SWITCHBOARD_TOKEN: server.adminToken,
  });
  // Created before or after the command listens, it is found: by the first claim, or on the wake.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const { id } = await createTodo('wait-q');
  const result = await waiting.done;
  expect(result.code).toBe(0);
  expect(parseJson(result).todo).toMatchObject({
    id,
    state: 'claimed',
    lease_token: expect.any(String),
  });
});

describe('a server that is not there yet', () => {
  test('regression: todo claim --wait started before its server exited 4 at once; it waits within --wait', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const waiting = startCli(['todo', 'claim', '--queue', 'late-q', '--wait', '60', '--json'], {
      ...home.env,
      SWITCHBOARD_URL: url,
      SWITCHBOARD_TOKEN: server.adminToken,
    });
    await expect
      .poll(() => waiting.stderr, { timeout: 20_000 })
      .toMatch(`waiting for switchboard at ${url} — cannot reach ${url}`);
    expect(waiting.child.exitCode).toBeNull();
    // The server a supervisor starts second: the same database, on the port the claim was given.
    const late = await startTestServer({ schema: server.schema, port });
    try {
      const { body } = await late.api(server.adminToken, 'POST', '/todos', {
        queue: 'late-q',
        title: 'arrived late',
      });
      const result = await waiting.done;
      expect(result.code).toBe(0);
      expect(parseJson(result).todo).toMatchObject({ id: body.todo.id, state: 'claimed' });
      expect(result.stderr.match(/waiting for switchboard/g)).toHaveLength(1);
    } finally {
      await late.stop();
    }
  });

  test('a server that never answers within --wait: exit 4 once the wait is over, not "no pending todo"', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const result = await startCli(['todo', 'claim', '--queue', 'q', '--wait', '1', '--json'], {
      ...home.env,
      SWITCHBOARD_URL: url,
      SWITCHBOARD_TOKEN: server.adminToken,
    }).done;
    expect(result.code).toBe(4);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toEqual([
      expect.stringMatching(`^waiting for switchboard at ${url} — cannot reach ${url}`),
      expect.stringMatching(`^cannot reach ${url} `),
    ]);
  });

  test('a token the server refuses is not waited on: exit 4 at once, one line', async () => {
    const result = await startCli(['todo', 'claim', '--queue', 'q', '--wait', '600'], {
      ...home.env,
      SWITCHBOARD_URL: server.url,
      SWITCHBOARD_TOKEN: 'sbk_not-a-token',
    }).done;
    expect(result.code).toBe(4);
    expect(result.stderr).not.toContain('waiting');
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});

describe('the wake stream', () => {
  test('rings on a wake for its queue, so a waiting claim is woken rather than polling', async () => {
    const client = createApiClient(credentials());
    const wakes = openWakeStream(credentials(), 'ring-q');
    try {
      await wakes.ready;
      expect(wakes.polling).toBe(false);
      const seen = wakes.rings;
      const woken = wakes.waitPast(seen, { deadline: Date.now() + 60_000 });
      await createTodo('other-q');
      const { id } = await createTodo('ring-q');
      expect(await woken).toBe(true);
      const claimed = await claimNextWaiting(client, wakes, 'ring-q', {
        deadline: Date.now() + 1000,
      });
      expect(claimed?.id).toBe(id);
      // Nothing left: the claim waits until the deadline and gives up.
      expect(
        await claimNextWaiting(client, wakes, 'ring-q', { deadline: Date.now() + 300 }),
      ).toBeNull();
    } finally {
      wakes.close();
    }
  });

  test('a wait ends at its deadline, or when its signal aborts', async () => {
    const wakes = openWakeStream(credentials(), 'quiet-q');
    try {
      await wakes.ready;
      expect(await wakes.waitPast(wakes.rings, { deadline: Date.now() + 100 })).toBe(false);
      const stop = new AbortController();
      const waiting = wakes.waitPast(wakes.rings, { deadline: Infinity, signal: stop.signal });
      stop.abort();
      expect(await waiting).toBe(false);
    } finally {
      wakes.close();
    }
  });

  test('with changes, it rings on a verdict given elsewhere, and is rung for no claimable todo', async () => {
    const human = (await server.api(server.adminToken, 'POST', '/humans', { name: 'watcher' })).body
      .token as string;
    const agent = (
      await server.api(human, 'POST', '/agents', { name: 'watcher-bot', queues: ['watch-q'] })
    ).body.token as string;
    const { body } = await server.api(agent, 'POST', '/approvals', { question: 'May I?' });
    const wakes = openWakeStream({ url: server.url, token: human }, undefined, { changes: true });
    try {
      await wakes.ready;
      // It watches; it never claims, so it must never take a claimable todo's ring.
      const sessions =
        await server.sql`select queues from consumer_sessions where principal = 'watcher'`;
      expect(sessions).toEqual([{ queues: [] }]);
      // What the server saw before this stream listened may ring it a few times more.
      while (await wakes.waitPast(wakes.rings, { deadline: Date.now() + 1500 }));
      const rang = wakes.waitPast(wakes.rings, { deadline: Infinity });
      // A verdict rings the asker, never the human who gave it: only the change rings here.
      await server.api(human, 'POST', `/todos/${body.todo.id}/approve`, {});
      expect(await rang).toBe(true);
    } finally {
      wakes.close();
    }
  });

  test('a refused stream fails `ready`', async () => {
    const wakes = openWakeStream({ url: server.url, token: 'sbk_nope' }, 'q');
    await expect(wakes.ready).rejects.toBeInstanceOf(ApiError);
    wakes.close();
  });
});

describe('against servers without the stream, or with a broken one', () => {
  let fake: Server;
  let url: string;
  let handle: (res: ServerResponse) => void;

  beforeAll(async () => {
    fake = createServer((_req, res) => handle(res));
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    fake.closeAllConnections();
    await new Promise((resolve) => fake.close(resolve));
  });

  test('no stream (404): every wait is a poll', async () => {
    handle = (res) =>
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end('{"error":"no route","code":"not_found"}');
    const wakes = openWakeStream({ url, token: 'sbk_x' }, 'q');
    try {
      await wakes.ready;
      expect(wakes.polling).toBe(true);
      expect(await wakes.waitPast(wakes.rings, { deadline: Date.now() + 10_000, attempt: 0 })).toBe(
        true,
      );
      expect(await wakes.waitPast(wakes.rings, { deadline: Date.now() + 50, attempt: 5 })).toBe(
        false,
      );
    } finally {
      wakes.close();
    }
  });

  test('a stream that ends is reconnected, and the new `ready` rings', async () => {
    let connections = 0;
    handle = (res) => {
      connections++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': ping\n\nevent: ready\ndata: {}\n\n');
      // The first connection drops at once; the second stays.
      if (connections === 1) res.end();
    };
    const wakes = openWakeStream({ url, token: 'sbk_x' }, 'q');
    try {
      await wakes.ready;
      const seen = wakes.rings;
      expect(await wakes.waitPast(seen, { deadline: Date.now() + 10_000 })).toBe(true);
      expect(connections).toBe(2);
    } finally {
      wakes.close();
    }
  });

  test('a stream that falls silent (not even a ping) is taken for dead and replaced', async () => {
    // What the channel now shares with the worker: its stream used to be trusted however long
    // it said nothing, so a connection that died without a word went unnoticed.
    let connections = 0;
    handle = (res) => {
      connections++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: ready\ndata: {}\n\n');
    };
    const stop = new AbortController();
    const lost: string[] = [];
    const readies: number[] = [];
    const following = followEventStream({
      credentials: { url, token: 'sbk_x' },
      client: 'channel',
      signal: stop.signal,
      silenceMs: 300,
      onEvent: (event) => {
        if (event === 'ready') readies.push(connections);
      },
      onLost: (error) => {
        lost.push(error.message);
        return true;
      },
    });
    try {
      await expect.poll(() => readies, { timeout: 10_000 }).toEqual([1, 2]);
      expect(lost[0]).toMatch(/closed the event stream|cannot reach/);
    } finally {
      stop.abort();
      await following;
    }
  });
});

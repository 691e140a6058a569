import { createHmac, randomUUID } from 'node:crypto';
import { request, type ClientRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, test } from 'vitest';
import { loadServerConfig } from '../../src/platform/config/server-config.js';
import { readFixture } from '../github/deliver.js';
import { postDeclaringLength } from '../support/bad-input.js';
import { openEventStream } from '../support/event-stream.js';
import { initializeRequest } from '../support/mcp-client.js';
import { startTestServer, WEBHOOK_SECRET, type TestServer } from '../support/test-server.js';

// Limits that hold under abuse (README, Reliability: limits): the bytes of webhook bodies held
// before their signature is checked, bodies never read for a caller who is not authenticated,
// request timeouts that spare the event streams, failed authentication per client address, and
// the rate per principal.

const signatureOf = (body: Buffer | string, secret = WEBHOOK_SECRET) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

const githubHeaders = (extra: Record<string, string> = {}) => ({
  'content-type': 'application/json',
  'x-github-event': 'issues',
  'x-github-delivery': randomUUID(),
  ...extra,
});

/** The unverified webhook bytes the server holds, as /metrics says. */
async function unverifiedBytes(server: TestServer): Promise<number | undefined> {
  const text = await fetch(`${server.url}/metrics`, {
    headers: { authorization: `Bearer ${server.adminToken}` },
  }).then((response) => response.text());
  const match = /^switchboard_unverified_webhook_bytes (\d+)$/m.exec(text);
  return match ? Number(match[1]) : undefined;
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  json: any;
}

/**
 * A webhook POST that declares `size` bytes and sends half of them, then waits: `finish()`
 * sends the rest (all spaces, so the signature it carries is wrong), `abort()` drops it.
 */
function holdWebhook(url: string, path: string, size: number) {
  const req: ClientRequest = request(new URL(path, url), {
    method: 'POST',
    headers: {
      ...githubHeaders(),
      'x-hub-signature-256': signatureOf('something else'),
      'content-length': String(size),
    },
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () =>
        resolve({
          status: response.statusCode!,
          headers: response.headers,
          json: text ? JSON.parse(text) : undefined,
        }),
      );
    });
    req.on('error', reject);
  });
  // Only an aborted request errors, and then nobody waits for its answer.
  answer.catch(() => {});
  req.write(Buffer.alloc(size / 2, ' '));
  return {
    answer,
    finish: () => req.end(Buffer.alloc(size / 2, ' ')),
    abort: () => req.destroy(),
  };
}

/** POSTs a whole body and reads the answer with its headers. */
async function post(
  url: string,
  body: string | Buffer,
  headers: Record<string, string>,
): Promise<Answer> {
  const response = await fetch(url, { method: 'POST', headers, body });
  const text = await response.text();
  const isJson = response.headers.get('content-type')?.startsWith('application/json');
  return {
    status: response.status,
    headers: Object.fromEntries(response.headers),
    json: isJson ? JSON.parse(text) : undefined,
  };
}

describe('webhook bodies before their signature is checked', () => {
  const SIZE = 64 * 1024;

  test('regression: ten concurrent webhook bodies with bad signatures were all held in memory, with no bound across requests', async () => {
    const server = await startTestServer({ limits: { unverifiedBodyBytes: 10 * SIZE } });
    const held = Array.from({ length: 10 }, () =>
      holdWebhook(server.url, '/api/github/webhooks', SIZE),
    );
    try {
      // Ten bodies arriving, each holding its declared size of the budget: it is spent.
      await expect.poll(() => unverifiedBytes(server)).toBe(10 * SIZE);

      // The eleventh is refused at once, unread (it never sends its body), and says when to retry.
      const url = new URL('/api/github/webhooks', server.url);
      const eleventh = await postDeclaringLength(url, {
        ...githubHeaders({ 'x-hub-signature-256': signatureOf('x') }),
        'content-length': String(SIZE),
      });
      expect(eleventh.status).toBe(503);
      expect(JSON.parse(eleventh.text)).toEqual({
        error: expect.stringContaining('SWITCHBOARD_UNVERIFIED_BODY_MB'),
        code: 'busy',
      });
      // A signed delivery waits its turn like any other, and so do a source's deliveries.
      const fixture = await readFixture('issues.labeled.switchboard');
      const signed = await post(`${server.url}/api/github/webhooks`, fixture, {
        ...githubHeaders({ 'x-hub-signature-256': signatureOf(fixture) }),
      });
      expect(signed.status).toBe(503);
      expect(Number(signed.headers['retry-after'])).toBeGreaterThan(0);
      const source = await post(`${server.url}/api/sources/any/webhooks`, '{}', {
        'content-type': 'application/json',
      });
      expect(source.status).toBe(503);

      // One held body arrives whole: its signature is wrong, and its bytes leave the budget.
      held[0]!.finish();
      expect((await held[0]!.answer).status).toBe(401);
      await expect.poll(() => unverifiedBytes(server)).toBe(9 * SIZE);
      const again = await post(`${server.url}/api/github/webhooks`, fixture, {
        ...githubHeaders({ 'x-hub-signature-256': signatureOf(fixture) }),
      });
      expect(again.status).toBe(200);

      // A dropped one gives its bytes back too.
      held[1]!.abort();
      await expect.poll(() => unverifiedBytes(server)).toBe(8 * SIZE);
    } finally {
      for (const one of held) one.abort();
      await server.stop();
    }
  });

  test('a body larger than the whole budget is refused 413 before it is read', async () => {
    const server = await startTestServer({ limits: { unverifiedBodyBytes: SIZE } });
    try {
      const answer = await postDeclaringLength(new URL('/api/github/webhooks', server.url), {
        ...githubHeaders({ 'x-hub-signature-256': signatureOf('x') }),
        'content-length': String(SIZE + 1),
      });
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.text)).toMatchObject({ code: 'too_large' });
      expect(await unverifiedBytes(server)).toBe(0);
    } finally {
      await server.stop();
    }
  });
});

describe('bodies of callers who are not authenticated', () => {
  test('regression: the JSON API and MCP read a body of up to 2 MB before they checked the token', async () => {
    const server = await startTestServer();
    try {
      // Each request declares 1 MB and sends one byte: only a server that does not wait for
      // the body answers at all.
      for (const [path, authorization] of [
        ['/api/v1/todos', undefined],
        ['/api/v1/todos', `Bearer sbk_${'x'.repeat(43)}`],
        ['/mcp', undefined],
        ['/mcp', `Bearer sbk_${'x'.repeat(43)}`],
      ] as const) {
        const answer = await postDeclaringLength(new URL(path, server.url), {
          'content-type': 'application/json',
          'content-length': String(1024 * 1024),
          ...(authorization ? { authorization } : {}),
        });
        expect(answer.status, `${path} ${authorization ?? 'without a token'}`).toBe(401);
        // /mcp answers as an OAuth protected resource (RFC 6750), the API in its own shape.
        expect(JSON.parse(answer.text)).toMatchObject(
          path === '/mcp' ? { error: 'invalid_token' } : { code: 'unauthenticated' },
        );
      }
      // The console reads a form only from a signed-in human.
      const form = await postDeclaringLength(new URL('/sign-out', server.url), {
        'content-type': 'application/x-www-form-urlencoded',
        'content-length': String(200 * 1024),
      });
      expect(form.status).toBe(303);
    } finally {
      await server.stop();
    }
  });
});

describe('timeouts', () => {
  test('regression: the server set no header or request timeout (event streams stay open past them)', async () => {
    const server = await startTestServer({
      httpTimeouts: {
        headersTimeout: 1000,
        requestTimeout: 2000,
        connectionsCheckingInterval: 100,
      },
    });
    let stream: Awaited<ReturnType<typeof openEventStream>> | undefined;
    try {
      const { body } = await server.api(server.adminToken, 'POST', '/agents', {
        name: 'waiter',
        queues: ['timeouts'],
      });
      stream = await openEventStream(server.url, body.token as string);

      // Headers that never end: 408, and the connection closed.
      const socket = connect(Number(new URL(server.url).port), '127.0.0.1');
      socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      let received = '';
      socket.on('data', (chunk) => (received += chunk.toString()));
      await new Promise((resolve) => socket.once('close', resolve));
      expect(received).toMatch(/^HTTP\/1\.1 408 /);

      // A webhook body that stops halfway: 408, and its bytes leave the budget.
      const held = holdWebhook(server.url, '/api/github/webhooks', 1024);
      expect((await held.answer).status).toBe(408);
      await expect.poll(() => unverifiedBytes(server)).toBe(0);

      // The stream, open since before both, is still open and still rung.
      const todo = await server.api(server.adminToken, 'POST', '/todos', {
        queue: 'timeouts',
        title: 'after the timeouts',
      });
      expect(todo.status).toBe(201);
      await stream.waitFor(
        (event) => event.event === 'wake' && event.data.todo_id === todo.body.todo.id,
      );
    } finally {
      stream?.close();
      await server.stop();
    }
  });
});

describe('failed authentication per client address', () => {
  const bad = `Bearer sbk_${'x'.repeat(43)}`;
  const from = (address: string) => ({ 'x-forwarded-for': address });

  test('regression: failed bearer tokens and webhook signatures were not limited per client address', async () => {
    const server = await startTestServer({
      limits: { authFailures: 3, trustProxy: ['loopback'] },
    });
    try {
      const get = (authorization: string, address: string) =>
        fetch(`${server.url}/api/v1/todos`, { headers: { authorization, ...from(address) } });

      for (let i = 0; i < 3; i++) expect((await get(bad, '203.0.113.7')).status).toBe(401);
      const over = await get(bad, '203.0.113.7');
      expect(over.status).toBe(429);
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await over.json()).toEqual({
        error: expect.stringContaining('SWITCHBOARD_AUTH_FAILURE_LIMIT'),
        code: 'too_many_failures',
      });
      // MCP shares the count.
      const mcp = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { authorization: bad, 'content-type': 'application/json', ...from('203.0.113.7') },
        body: '{}',
      });
      expect(mcp.status).toBe(429);
      // A valid token from the same address is accepted: others' failures never shut it out.
      expect((await get(`Bearer ${server.adminToken}`, '203.0.113.7')).status).toBe(200);
      // Another client behind the same proxy has its own count.
      expect((await get(bad, '198.51.100.9')).status).toBe(401);

      // Signatures are counted apart from tokens: the address's webhooks still go through …
      const fixture = await readFixture('issues.labeled.switchboard');
      const deliver = (signature: string, address: string) =>
        post(`${server.url}/api/github/webhooks`, fixture, {
          ...githubHeaders({ 'x-hub-signature-256': signature }),
          ...from(address),
        });
      expect((await deliver(signatureOf(fixture), '203.0.113.7')).status).toBe(200);
      // … until three bad signatures: then its bodies are refused unread, even a signed one.
      for (let i = 0; i < 3; i++) {
        expect((await deliver(signatureOf('other bytes'), '203.0.113.7')).status).toBe(401);
      }
      const refused = await deliver(signatureOf(fixture), '203.0.113.7');
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.json).toMatchObject({ code: 'too_many_failures' });
      const unread = await postDeclaringLength(new URL('/api/sources/any/webhooks', server.url), {
        'content-type': 'application/json',
        'content-length': String(1024 * 1024),
        ...from('203.0.113.7'),
      });
      expect(unread.status).toBe(429);
      expect((await deliver(signatureOf(fixture), '198.51.100.9')).status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  test('without a trusted proxy, X-Forwarded-For is not believed: a client cannot dodge its count', async () => {
    const server = await startTestServer({ limits: { authFailures: 2 } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        const response = await fetch(`${server.url}/api/v1/todos`, {
          headers: { authorization: bad, ...from(`203.0.113.${i}`) },
        });
        statuses.push(response.status);
      }
      expect(statuses).toEqual([401, 401, 429, 429]);
    } finally {
      await server.stop();
    }
  });
});

describe('requests per second per principal', () => {
  test('regression: one principal could send requests at any rate (SWITCHBOARD_RATE_LIMIT)', async () => {
    // One request per 100 s: the second of a principal's is always over.
    const server = await startTestServer({ limits: { ratePerSecond: 0.01 } });
    try {
      const bob = (await server.api(server.adminToken, 'POST', '/humans', { name: 'bob' })).body
        .token as string;
      expect((await server.api(bob, 'GET', '/todos')).status).toBe(200);
      const over = await fetch(`${server.url}/api/v1/todos`, {
        headers: { authorization: `Bearer ${bob}` },
      });
      expect(over.status).toBe(429);
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await over.json()).toEqual({
        error: expect.stringContaining('SWITCHBOARD_RATE_LIMIT'),
        code: 'rate_limited',
      });
      // MCP draws on the same bucket, and refuses in JSON-RPC.
      const mcp = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${bob}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
      expect(mcp.status).toBe(429);
      expect(mcp.headers.get('retry-after')).not.toBeNull();
      expect(await mcp.json()).toMatchObject({
        jsonrpc: '2.0',
        error: { message: expect.stringContaining('SWITCHBOARD_RATE_LIMIT') },
      });
      // Each principal has a bucket of its own: the admin spent its one request on adding bob.
      const admin = await server.api(server.adminToken, 'GET', '/todos');
      expect(admin.status).toBe(429);
    } finally {
      await server.stop();
    }
  });

  test('regression: a JSON-RPC batch on /mcp was one request of the rate, whatever it held', async () => {
    // Two requests a second, in bursts of two.
    const server = await startTestServer({ limits: { ratePerSecond: 2 } });
    try {
      const bob = (await server.api(server.adminToken, 'POST', '/humans', { name: 'bob' })).body
        .token as string;
      const bot = (await server.api(bob, 'POST', '/agents', { name: 'bot', queues: ['ci'] })).body
        .token as string;
      const post = (body: unknown, session?: string) =>
        fetch(`${server.url}/mcp`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${bot}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...(session ? { 'mcp-session-id': session } : {}),
          },
          body: JSON.stringify(body),
        });
      const initialized = await post(initializeRequest('batcher', 0));
      expect(initialized.status).toBe(200);
      const session = initialized.headers.get('mcp-session-id')!;
      const create = (id: number) => ({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'create_todo', arguments: { queue: 'ci', title: `batched ${id}` } },
      });
      const todos = async () =>
        (await server.sql<{ n: number }[]>`select count(*)::int as n from todos`)[0]!.n;

      // More at once than the limit ever lets through: refused whole, nothing done.
      const before = await todos();
      const tooMany = await post([create(1), create(2), create(3)], session);
      expect(tooMany.status).toBe(429);
      expect(await tooMany.json()).toMatchObject({
        jsonrpc: '2.0',
        error: { message: expect.stringMatching(/batch of 3 .*send at most 2 at a time/) },
      });
      expect(await todos()).toBe(before);

      // A batch of two is two of the rate: with the bucket full, it goes, and it empties it.
      await sleep(1100);
      const two = await post([create(4), create(5)], session);
      expect(two.status).toBe(200);
      expect(await two.json()).toHaveLength(2);
      const next = await post({ jsonrpc: '2.0', id: 6, method: 'ping' }, session);
      expect(next.status).toBe(429);
      expect(next.headers.get('retry-after')).not.toBeNull();
    } finally {
      await server.stop();
    }
  });

  test('off by default: a principal may send as fast as it likes', async () => {
    const server = await startTestServer();
    try {
      const statuses = await Promise.all(
        Array.from({ length: 50 }, () =>
          server.api(server.adminToken, 'GET', '/todos').then((r) => r.status),
        ),
      );
      expect(new Set(statuses)).toEqual(new Set([200]));
    } finally {
      await server.stop();
    }
  });
});

describe('settings', () => {
  const limits = (env: Record<string, string>) => loadServerConfig(env).limits;

  test('the defaults', () => {
    expect(limits({})).toEqual({
      trustProxy: false,
      ratePerSecond: undefined,
      mcpSessions: 100,
      streams: 100,
      unverifiedBodyBytes: 64 * 1024 * 1024,
      authFailures: 100,
    });
  });

  test('SWITCHBOARD_TRUST_PROXY: a hop count, or proxies by address, CIDR or range name', () => {
    expect(limits({ SWITCHBOARD_TRUST_PROXY: '1' })?.trustProxy).toBe(1);
    expect(limits({ SWITCHBOARD_TRUST_PROXY: '0' })?.trustProxy).toBe(false);
    expect(limits({ SWITCHBOARD_TRUST_PROXY: 'false' })?.trustProxy).toBe(false);
    expect(limits({ SWITCHBOARD_TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::1' })?.trustProxy).toEqual(
      ['loopback', '10.0.0.0/8', 'fd00::1/128'],
    );
    expect(() => limits({ SWITCHBOARD_TRUST_PROXY: 'true' })).toThrow(
      /^SWITCHBOARD_TRUST_PROXY: 'true' would trust every peer/,
    );
    expect(() => limits({ SWITCHBOARD_TRUST_PROXY: 'proxy.example' })).toThrow(
      /^SWITCHBOARD_TRUST_PROXY: 'proxy.example' is not an address or a CIDR/,
    );
  });

  test('the other limits', () => {
    expect(
      limits({
        SWITCHBOARD_RATE_LIMIT: '250',
        SWITCHBOARD_MAX_MCP_SESSIONS: '10',
        SWITCHBOARD_MAX_STREAMS: '20',
        SWITCHBOARD_UNVERIFIED_BODY_MB: '256',
        SWITCHBOARD_AUTH_FAILURE_LIMIT: '5',
      }),
    ).toMatchObject({
      ratePerSecond: 250,
      mcpSessions: 10,
      streams: 20,
      unverifiedBodyBytes: 256 * 1024 * 1024,
      authFailures: 5,
    });
    expect(() => limits({ SWITCHBOARD_RATE_LIMIT: '0' })).toThrow(/^SWITCHBOARD_RATE_LIMIT: /);
    expect(() => limits({ SWITCHBOARD_MAX_STREAMS: '0' })).toThrow(/^SWITCHBOARD_MAX_STREAMS: /);
  });
});

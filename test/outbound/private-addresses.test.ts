import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadServerConfig } from '../../src/platform/config/server-config.js';
import {
  addSource,
  gitlabHeaders,
  postToSource,
  readSourceFixture,
  setRules,
} from '../providers/support/sources.js';
import { resolveNames } from '../support/resolve-names.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { addHuman } from '../web/support/console.js';
import { startFakePushService, type FakePushService } from '../web/support/fake-push-service.js';
import { postSubscription, signInByFetch, vapidPublicKey } from '../web/support/push.js';

// Every request switchboard makes to an address a user gave it (an outbound webhook, a source's
// API, a browser's push service) goes through src/platform/egress: nothing inside the server's network
// is reached unless SWITCHBOARD_OUTBOUND_ALLOW says so, no redirect is followed, and no
// credential goes to another origin. Names are resolved by the test's resolver
// (test/support/resolve-names.ts; the fake push service's name too, to 127.0.0.1), so that one
// can point inside without a DNS server.

/** Nothing allowed: the default. */
let closed: TestServer;
/** 127.0.0.1/32 allowed, as a developer's machine would have it. */
let open: TestServer;
let push: FakePushService;
let restoreResolver: () => void;
/** A TCP listener on 127.0.0.1 that counts what connects and hangs up at once. */
let tcp: Server;
let tcpConnections = 0;
let tcpPort: number;

const TIMING = { webhookRetriesMs: [50], rerings: [60_000], scanMs: 50 };

beforeAll(async () => {
  tcp = createTcpServer((socket) => {
    tcpConnections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  tcpPort = (tcp.address() as AddressInfo).port;
  restoreResolver = resolveNames({
    'inside.example.test': ['127.0.0.1'],
    'metadata.example.test': ['169.254.169.254'],
    'gone.example.test': [],
  });
  closed = await startTestServer({
    deliveryTiming: TIMING,
    web: { push: { sweepMs: 200, retryDelaysMs: [100] } },
  });
  open = await startTestServer({ deliveryTiming: TIMING, outbound: { allow: ['127.0.0.1/32'] } });
  push = await startFakePushService(() => vapidPublicKey(closed));
});
afterAll(async () => {
  await closed?.stop();
  await open?.stop();
  await push?.close();
  restoreResolver?.();
  tcp?.close();
});

let agents = 0;
async function freshAgent(server: TestServer) {
  const n = ++agents;
  const { body } = await server.api(server.adminToken, 'POST', '/agents', {
    name: `outbound-${n}`,
    queues: [`out${n}`],
  });
  return { name: `outbound-${n}`, queue: `out${n}`, token: body.token as string };
}

/** Makes a todo on the agent's queue (nobody attached: its webhook is rung) and waits for the ring. */
async function ringOf(server: TestServer, agent: { queue: string }) {
  const id = (
    await server.api(server.adminToken, 'POST', '/todos', {
      queue: agent.queue,
      title: 'ring me',
    })
  ).body.todo.id as number;
  let rung: any;
  await expect
    .poll(async () => {
      const { history } = (await server.api(server.adminToken, 'GET', `/todos/${id}`)).body;
      rung = (history as any[]).find((e) => e.action === 'rung' && e.data.path === 'webhook');
      return rung !== undefined;
    })
    .toBe(true);
  return rung.data as { outcome: string };
}

const webhookOf = async (server: TestServer, principal: string) =>
  server.sql`select url from consumer_webhooks where principal = ${principal}`;

describe('webhooks', () => {
  test('regression: a webhook to a private, metadata or loopback address was accepted', async () => {
    const agent = await freshAgent(closed);
    const refused = [
      'https://169.254.169.254/latest/meta-data/',
      'http://169.254.169.254/latest/meta-data/',
      'https://10.0.0.1/hook',
      'https://172.16.5.4/hook',
      'https://192.168.1.1/hook',
      'https://100.64.0.1/hook',
      'https://0.0.0.0/hook',
      'https://224.0.0.1/hook',
      'https://255.255.255.255/hook',
      'https://[fd00::1]/hook',
      'https://[fe80::1]/hook',
      'https://[::1]/hook',
      'https://[::]/hook',
      'https://[ff02::1]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://[::ffff:a9fe:a9fe]/hook',
      'http://127.0.0.1:9/hook',
      'http://127.1:9/hook',
      'http://2130706433:9/hook',
      'http://0x7f.0.0.1:9/hook',
      'http://0177.0.0.1:9/hook',
      'http://localhost:9/hook',
      'https://localhost/hook',
      'https://sub.localhost/hook',
    ];
    for (const url of refused) {
      const { status, body } = await closed.api(agent.token, 'PUT', '/webhook', { url });
      expect({ url, status, code: body.code }).toEqual({ url, status: 400, code: 'invalid' });
      expect(body.error).toMatch(/^webhook url .*SWITCHBOARD_OUTBOUND_ALLOW/);
    }
    expect(await webhookOf(closed, agent.name)).toEqual([]);
  });

  test('regression: a webhook whose name resolves to a loopback or metadata address was rung', async () => {
    const inside = await freshAgent(closed);
    const metadata = await freshAgent(closed);
    const gone = await freshAgent(closed);
    for (const [agent, host] of [
      [inside, `inside.example.test:${tcpPort}`],
      [metadata, 'metadata.example.test'],
      [gone, 'gone.example.test'],
    ] as const) {
      // A name is not refused when it is given: what it resolves to is checked when it is used.
      const url = `https://${host}/hook`;
      expect((await closed.api(agent.token, 'PUT', '/webhook', { url })).status).toBe(200);
    }
    const before = tcpConnections;
    const outcomes = [
      (await ringOf(closed, inside)).outcome,
      (await ringOf(closed, metadata)).outcome,
      (await ringOf(closed, gone)).outcome,
    ];
    // Refused before any connection was made…
    expect(tcpConnections - before).toBe(0);
    // …and told in words that do not say what is inside: a name that resolves inside reads as
    // one that does not resolve at all.
    expect(outcomes).toEqual([
      'failed (unreachable)',
      'failed (unreachable)',
      'failed (unreachable)',
    ]);
  });

  test('regression: SWITCHBOARD_OUTBOUND_ALLOW: what it names is reached, and nothing else inside', async () => {
    const received: IncomingHttpHeaders[] = [];
    const receiver = createHttpServer((req, res) => {
      received.push(req.headers);
      req.resume().on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const port = (receiver.address() as AddressInfo).port;
      const agent = await freshAgent(open);
      for (const url of [
        `https://127.0.0.2:${port}/hook`,
        `https://10.0.0.1/hook`,
        'https://[::1]/hook',
      ]) {
        const { status, body } = await open.api(agent.token, 'PUT', '/webhook', { url });
        expect({ url, status, code: body.code }).toEqual({ url, status: 400, code: 'invalid' });
      }
      const url = `http://127.0.0.1:${port}/hook`;
      expect((await open.api(agent.token, 'PUT', '/webhook', { url })).status).toBe(200);
      expect(await ringOf(open, agent)).toMatchObject({ outcome: 'delivered' });
      expect(received).toHaveLength(1);
      expect(received[0]!['webhook-signature']).toMatch(/^v1,/);
      // A name that resolves inside the allowed range is reached too, over https or http.
      const named = await freshAgent(open);
      const byName = `http://inside.example.test:${port}/hook`;
      expect((await open.api(named.token, 'PUT', '/webhook', { url: byName })).status).toBe(200);
      expect(await ringOf(open, named)).toMatchObject({ outcome: 'delivered' });
      expect(received).toHaveLength(2);
    } finally {
      receiver.close();
    }
  });

  test('regression: SWITCHBOARD_OUTBOUND_ALLOW is read as CIDRs, and a bad one stops the start', () => {
    expect(loadServerConfig({}).outboundAllow).toEqual([]);
    expect(
      loadServerConfig({ SWITCHBOARD_OUTBOUND_ALLOW: '127.0.0.1/32, ::1/128,10.1.2.3' })
        .outboundAllow,
    ).toEqual(['127.0.0.1/32', '::1/128', '10.1.2.3/32']);
    for (const bad of ['10.0.0.0/33', 'example.com', '127.0.0.1/32,,', 'fd00::/129'])
      expect(() => loadServerConfig({ SWITCHBOARD_OUTBOUND_ALLOW: bad })).toThrow(
        /^SWITCHBOARD_OUTBOUND_ALLOW: .* is not an address or a CIDR/,
      );
  });
});

describe('sources', () => {
  test('regression: a source API URL on a private, metadata or loopback address was accepted', async () => {
    let n = 0;
    for (const api_url of [
      'http://169.254.169.254',
      'https://10.1.2.3',
      'https://[fd00::1]:3000',
      'http://127.1:3000',
      'https://localhost:3000',
    ]) {
      const { status, body } = await closed.api(closed.adminToken, 'POST', '/sources', {
        kind: 'gitea',
        name: `inside-${++n}`,
        api_url,
        api_token: 'a-token',
      });
      expect({ api_url, status, code: body.code }).toEqual({
        api_url,
        status: 400,
        code: 'invalid',
      });
      expect(body.error).toMatch(/^the API URL .*SWITCHBOARD_OUTBOUND_ALLOW/);
    }
    const { sources } = (await closed.api(closed.adminToken, 'GET', '/sources')).body;
    expect(sources.filter((s: { name: string }) => s.name.startsWith('inside-'))).toEqual([]);
  });

  test("regression: a source's reply followed a redirect and carried GitLab's private-token to another origin", async () => {
    const asked: { origin: string; path: string; token: unknown }[] = [];
    const listen = async (answer: (res: import('node:http').ServerResponse) => void) => {
      const fake = createHttpServer((req, res) => {
        asked.push({
          origin: `http://127.0.0.1:${(fake.address() as AddressInfo).port}`,
          path: req.url!,
          token: req.headers['private-token'],
        });
        req.resume().on('end', () => answer(res));
      });
      await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
      return { server: fake, origin: `http://127.0.0.1:${(fake.address() as AddressInfo).port}` };
    };
    // Another origin (another port is another origin) that would take the note and the token.
    const elsewhere = await listen((res) => res.writeHead(201).end('{"id":1}'));
    const gitlab = await listen((res) =>
      res
        .writeHead(302, { location: `${elsewhere.origin}/api/v4/projects/4861503/issues/1/notes` })
        .end(),
    );
    try {
      const { secret } = await addSource(open, {
        kind: 'gitlab',
        name: 'moved-lab',
        api_url: gitlab.origin,
        api_token: 'glpat-stays-home',
      });
      await setRules(open, 'moved-lab', 'trust:\n  logins: [sytses]\n');
      const body = await readSourceFixture('gitlab', 'note.create.command');
      const sent = await postToSource(open, 'moved-lab', body, gitlabHeaders('note', secret), 'x');
      const todoId = sent.body.delivery.todo_id as number;
      const { body: agent } = await open.api(open.adminToken, 'POST', '/agents', {
        name: 'lab-worker',
        queues: ['issues'],
      });
      expect((await open.api(agent.token, 'POST', `/todos/${todoId}/claim`, {})).status).toBe(200);
      expect(
        (await open.api(agent.token, 'POST', `/todos/${todoId}/reply`, { text: 'On it.' })).status,
      ).toBe(200);
      const outbox = () =>
        open.sql<{ state: string; last_error: string | null }[]>`
          select state, last_error from outbox where todo_id = ${todoId} order by id`;
      await expect.poll(async () => (await outbox()).map((row) => row.state)).toEqual(['dead']);
      expect((await outbox())[0]!.last_error).toMatch(
        /^gitlab answered 302, a redirect: not followed/,
      );
      // The token went to the API URL it was given with, and nowhere else.
      expect(asked).toEqual([
        {
          origin: gitlab.origin,
          path: '/api/v4/projects/4861503/issues/1/notes',
          token: 'glpat-stays-home',
        },
      ]);
    } finally {
      gitlab.server.close();
      elsewhere.server.close();
    }
  });
});

describe('web push', () => {
  test('regression: a push endpoint whose name resolves to a loopback address was pushed to', async () => {
    const token = await addHuman(closed, 'pushed');
    const session = await signInByFetch(closed, token);
    const subscription = push.subscribe();
    // The endpoint is a name (push-routes refuses an address): what it resolves to is checked when
    // the push is sent.
    expect((await postSubscription(closed, subscription, session)).status).toBe(204);
    const id = (await closed.api(token, 'POST', '/approvals', { question: 'Inside?' })).body.todo
      .id as number;
    let pushed: any;
    await expect
      .poll(async () => {
        const { history } = (await closed.api(token, 'GET', `/todos/${id}`)).body;
        pushed = (history as any[]).find(
          (e) => e.action === 'notified' && e.data.path === 'web_push',
        );
        return pushed !== undefined;
      })
      .toBe(true);
    // Refused before any connection was made, and not tried again.
    expect(push.connections()).toBe(0);
    expect(pushed.data).toMatchObject({
      outcome: 'failed (no answer from the push service: unreachable)',
      tries: 1,
    });
  });
});

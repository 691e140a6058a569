import { afterAll, beforeAll, expect, test } from 'vitest';
import webpush from 'web-push';
import type { Logger } from '../../src/platform/logger.js';
import { SUBSCRIPTIONS_PER_HUMAN } from '../../src/integrations/web-push/push-subscriptions.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { addHuman } from './support/console.js';
import {
  startFakePushService,
  tokenOf,
  type FakePushService,
  type SubscriptionJson,
} from './support/fake-push-service.js';
import {
  postSubscription,
  signInByFetch,
  vapidPublicKey,
  type FetchSession,
} from './support/push.js';

// The sending side of Web Push against a fake push service (test/web/support/fake-push-service.ts)
// that verifies each request's VAPID token and decrypts its body; subscriptions are made here, as
// a browser would make them, and handed in through the console's own form.

let server: TestServer;
let second: TestServer;
let push: FakePushService;
const logged: string[] = [];
const recordingLog: Logger = {
  debug: (fields, message) => logged.push(JSON.stringify({ ...fields, message })),
  info: (fields, message) => logged.push(JSON.stringify({ ...fields, message })),
  warn: (fields, message) => logged.push(JSON.stringify({ ...fields, message })),
  error: (fields, message) => logged.push(JSON.stringify({ ...fields, message })),
};
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  push = await startFakePushService(() => vapidPublicKey(server));
  const tuning = { sweepMs: 200, retryDelaysMs: [100, 200] };
  // The fake service is on 127.0.0.1: allowed here, as SWITCHBOARD_OUTBOUND_ALLOW would.
  const outbound = { allow: ['127.0.0.1/32'], ca: push.certificate };
  server = await startTestServer({
    log: recordingLog,
    sweepIntervalMs: 200,
    web: { push: tuning },
    outbound,
  });
  // A second process on the same database: both hear every wake.
  second = await startTestServer({ schema: server.schema, web: { push: tuning }, outbound });
});
afterAll(async () => {
  await second?.stop();
  await server?.stop();
  await push?.close();
});

let people = 0;
/** A human with `browsers` sessions, each with a subscription handed in. */
async function humanWithBrowsers(browsers: number) {
  const name = `h${++people}`;
  const token = await addHuman(server, name);
  const subscriptions: SubscriptionJson[] = [];
  const sessions: FetchSession[] = [];
  for (let i = 0; i < browsers; i++) {
    const session = await signInByFetch(server, token);
    const subscription = push.subscribe();
    expect((await postSubscription(server, subscription, session)).status).toBe(204);
    sessions.push(session);
    subscriptions.push(subscription);
  }
  const tokens = new Set(subscriptions.map(tokenOf));
  return {
    name,
    token,
    sessions,
    subscriptions,
    /** The pushes its browsers got (refusals included). */
    received: () => push.received.filter((p) => tokens.has(p.token)),
  };
}

const history = async (token: string, id: number) =>
  (await server.api(token, 'GET', `/todos/${id}`)).body.history as any[];
const storedReasons = async (token: string, id: number) =>
  (await history(token, id)).filter((e) => e.action === 'wake_stored').map((e) => e.data.reason);
const pushEvents = async (token: string, id: number) =>
  (await history(token, id)).filter((e) => e.action === 'notified' && e.data.path === 'web_push');

test('an approval is pushed once to each of its human’s browsers, though two processes hear it; a verdict closes it', async () => {
  const ada = await humanWithBrowsers(2);
  const bob = await humanWithBrowsers(1);
  const input = '{"command":"deploy --token SECRET-INPUT-PREVIEW"}';
  const asked = await server.api(ada.token, 'POST', '/approvals', {
    question: 'Deploy to production?',
    body: input,
    ttl_seconds: 900,
  });
  const id = asked.body.todo.id as number;

  await expect.poll(() => ada.received().length).toBe(2);
  for (const got of ada.received()) {
    // Only the id and the title: never the input.
    expect(got.message).toEqual({ type: 'approval', id, title: 'Deploy to production?' });
    expect(JSON.stringify(got.message)).not.toContain('SECRET');
    expect(got.ttl).toBeGreaterThan(880);
    expect(got.ttl).toBeLessThanOrEqual(900);
    expect(got.urgency).toBe('high');
    expect(got.topic).toBe(`approval-${id}`);
    expect(got.jwt.aud).toBe(push.origin);
    expect(got.jwt.sub).toBe('mailto:switchboard@invalid');
  }
  expect(new Set(ada.received().map((p) => p.token))).toEqual(
    new Set(ada.subscriptions.map(tokenOf)),
  );
  await expect.poll(async () => (await pushEvents(ada.token, id)).length).toBe(2);
  const events = await pushEvents(ada.token, id);
  expect(
    events.map((e) => [e.actor, e.via, e.data.principal, e.data.push, e.data.outcome]),
  ).toEqual([
    ['web-push', 'delivery', ada.name, 'approval', 'delivered'],
    ['web-push', 'delivery', ada.name, 'approval', 'delivered'],
  ]);
  expect(events.every((e) => e.data.service === push.origin)).toBe(true);
  // The endpoint is a capability: no history names it.
  const text = JSON.stringify(await history(ada.token, id));
  for (const subscription of ada.subscriptions) expect(text).not.toContain(tokenOf(subscription));

  expect((await server.api(ada.token, 'POST', `/todos/${id}/approve`, {})).status).toBe(200);
  await expect.poll(() => ada.received().length).toBe(4);
  for (const got of ada.received().slice(2)) {
    expect(got.message).toEqual({
      type: 'closed',
      id,
      title: 'Deploy to production?',
      outcome: `allowed by ${ada.name}`,
    });
    expect(got.topic).toBe(`approval-${id}`);
    expect(got.urgency).toBe('normal');
  }
  await pause(600);
  // Once each, though both processes heard both wakes and both sweep; bob heard nothing.
  expect(ada.received()).toHaveLength(4);
  expect(bob.received()).toEqual([]);
  expect(push.rejected).toEqual([]);
  expect(await server.sql`select * from web_push_notices where todo_id = ${id}`).toEqual([]);
});

test('regression: an approval pushed to its human’s browsers was recorded as “nobody was told”', async () => {
  // No session of ada's is attached and she has no webhook: before, the history said nobody was
  // told, while her browsers were being pushed to.
  const ada = await humanWithBrowsers(2);
  const asked = await server.api(ada.token, 'POST', '/approvals', { question: 'Rotate keys?' });
  const id = asked.body.todo.id as number;
  await expect.poll(async () => (await pushEvents(ada.token, id)).length).toBe(2);
  // Recorded by the notice, apart from the pushes (which it does not wait for): polled too.
  await expect
    .poll(() => storedReasons(ada.token, id))
    .toEqual([`${ada.name} has no session attached and no webhook; Web Push tells its 2 browsers`]);

  // Without a browser the history still says that nobody was told.
  const bob = await humanWithBrowsers(0);
  const bobs = await server.api(bob.token, 'POST', '/approvals', { question: 'Rotate keys?' });
  const bobId = bobs.body.todo.id as number;
  await expect
    .poll(() => storedReasons(bob.token, bobId))
    .toEqual([`nobody was told: ${bob.name} has no session attached and no webhook`]);
});

test('an approval that expires or is canceled gets its closing push from the sweep (no wake tells of either)', async () => {
  const cy = await humanWithBrowsers(1);
  const short = (
    await server.api(cy.token, 'POST', '/approvals', { question: 'Quick?', ttl_seconds: 2 })
  ).body.todo.id as number;
  const canceled = (await server.api(cy.token, 'POST', '/approvals', { question: 'Later?' })).body
    .todo.id as number;
  await expect.poll(() => cy.received().length).toBe(2);
  expect((await server.api(cy.token, 'POST', `/todos/${canceled}/cancel`, {})).status).toBe(200);
  await expect
    .poll(
      () =>
        cy
          .received()
          .filter((p) => p.message.type === 'closed')
          .map((p) => p.message),
      {
        timeout: 10_000,
      },
    )
    .toEqual(
      expect.arrayContaining([
        { type: 'closed', id: canceled, title: 'Later?', outcome: 'canceled' },
        { type: 'closed', id: short, title: 'Quick?', outcome: 'expired' },
      ]),
    );
  await pause(500);
  expect(cy.received()).toHaveLength(4);
});

test('a subscription the push service says is gone (410, 404) is removed, and that is recorded', async () => {
  const di = await humanWithBrowsers(3);
  const [dead, missing, alive] = di.subscriptions as [
    SubscriptionJson,
    SubscriptionJson,
    SubscriptionJson,
  ];
  push.forget(tokenOf(dead), 410);
  push.forget(tokenOf(missing), 404);
  const id = (await server.api(di.token, 'POST', '/approvals', { question: 'Gone?' })).body.todo
    .id as number;
  await expect.poll(async () => (await pushEvents(di.token, id)).length).toBe(3);
  const outcomes = (await pushEvents(di.token, id)).map((e) => e.data.outcome).sort();
  expect(outcomes).toEqual([
    'delivered',
    'failed (404 from the push service: the subscription is gone, so it was removed)',
    'failed (410 from the push service: the subscription is gone, so it was removed)',
  ]);
  const left = await server.sql<{ endpoint: string }[]>`
    select s.endpoint from web_push_subscriptions s join principals p on p.id = s.principal_id
    where p.name = ${di.name}`;
  expect(left.map((row) => row.endpoint)).toEqual([alive.endpoint]);
  // The next approval goes to the browser that is left only.
  const before = di.received().length;
  const next = (await server.api(di.token, 'POST', '/approvals', { question: 'Again?' })).body.todo
    .id as number;
  await expect.poll(async () => (await pushEvents(di.token, next)).length).toBe(1);
  expect(
    di
      .received()
      .slice(before)
      .map((p) => p.token),
  ).toEqual([tokenOf(alive)]);
});

test('a push the service puts off (503, 429 with Retry-After) is tried again within the approval’s life', async () => {
  const ed = await humanWithBrowsers(1);
  push.failNext(tokenOf(ed.subscriptions[0]!), [503, 429], { 'retry-after': '0' });
  const id = (await server.api(ed.token, 'POST', '/approvals', { question: 'Retry?' })).body.todo
    .id as number;
  await expect.poll(async () => (await pushEvents(ed.token, id)).length).toBe(1);
  const [event] = await pushEvents(ed.token, id);
  expect(event.data).toMatchObject({ outcome: 'delivered', tries: 3 });
  expect(ed.received().map((p) => p.status)).toEqual([503, 429, 201]);
  // What was logged of the failures names the service, never the endpoint or a key.
  const [{ private_key }] = await server.sql<[{ private_key: string }]>`
    select private_key from web_push_keys`;
  const everything = logged.join('\n');
  expect(everything).not.toContain(private_key);
  expect(everything).not.toContain(tokenOf(ed.subscriptions[0]!));
});

test('an approval whose wake was missed is pushed by the next sweep', async () => {
  const fe = await humanWithBrowsers(1);
  // Written as a writer that announces its own wakes after commit (migrations/0012) and then
  // never does: no process hears of it.
  const [{ id }] = await server.sql.begin(async (tx) => {
    await tx`select set_config('switchboard.announce_new_todos', 'on', true)`;
    return tx<[{ id: number }]>`
      insert into todos (queue, kind, title, source, attributed_to, assignee, requested_by, expires_at)
      values ('approvals', 'approval', 'Unannounced?', 'api', ${fe.name}, ${fe.name}, ${fe.name},
              now() + interval '10 minutes')
      returning id`;
  });
  await expect
    .poll(() => fe.received().map((p) => p.message))
    .toEqual([{ type: 'approval', id, title: 'Unannounced?' }]);
});

test('refusals change nothing: no CSRF token, a foreign Origin, signed out, a subscription that is not one', async () => {
  const gu = await humanWithBrowsers(0);
  const session = await signInByFetch(server, gu.token);
  const count = async () =>
    (await server.sql<[{ n: number }]>`select count(*)::int as n from web_push_subscriptions`)[0].n;
  const before = await count();
  const good = push.subscribe();

  const noToken = await postSubscription(server, good, { cookie: session.cookie });
  expect(noToken.status).toBe(403);
  expect(await noToken.text()).toMatch(/security token is missing or stale/);
  const foreign = await postSubscription(server, good, {
    ...session,
    origin: 'https://evil.example',
  });
  expect(foreign.status).toBe(403);
  expect(await foreign.text()).toMatch(/not sent from switchboard’s own pages/);
  const noOrigin = await postSubscription(server, good, { ...session, origin: null });
  expect(noOrigin.status).toBe(403);
  const signedOut = await postSubscription(server, good, { csrf: session.csrf });
  expect(signedOut.status).toBe(303);
  expect(signedOut.headers.get('location')).toBe('/sign-in');

  const bad: [string, SubscriptionJson, RegExp][] = [
    ['plain http', { ...good, endpoint: good.endpoint.replace('https:', 'http:') }, /endpoint/],
    ['an IP address', { ...good, endpoint: 'https://10.0.0.7/send/x' }, /endpoint/],
    ['localhost', { ...good, endpoint: 'https://localhost:8443/send/x' }, /endpoint/],
    ['credentials', { ...good, endpoint: 'https://u:p@push.example.test/x' }, /endpoint/],
    ['not a point', { ...good, keys: { ...good.keys, p256dh: 'B' + 'A'.repeat(86) } }, /p256dh/],
    ['a short auth', { ...good, keys: { ...good.keys, auth: 'AAAA' } }, /auth/],
  ];
  for (const [what, subscription, message] of bad) {
    const refused = await postSubscription(server, subscription, session);
    expect(refused.status, what).toBe(400);
    expect(await refused.text(), what).toMatch(message);
  }
  expect(await count()).toBe(before);

  // The same request, done right, works: the refusals were about the request only.
  expect((await postSubscription(server, good, session)).status).toBe(204);
  expect(await count()).toBe(before + 1);
});

test('signing out deletes the session’s subscription; an expired session’s browser is not pushed to', async () => {
  const hy = await humanWithBrowsers(2);
  const [leaving] = hy.sessions as [FetchSession];
  const signOut = await fetch(`${server.url}/sign-out`, {
    method: 'POST',
    headers: {
      cookie: leaving.cookie,
      origin: server.url,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ _csrf: leaving.csrf }),
    redirect: 'manual',
  });
  expect(signOut.status).toBe(303);
  const left = await server.sql<{ endpoint: string }[]>`
    select s.endpoint from web_push_subscriptions s join principals p on p.id = s.principal_id
    where p.name = ${hy.name}`;
  expect(left.map((row) => row.endpoint)).toEqual([hy.subscriptions[1]!.endpoint]);

  await server.sql`
    update web_sessions set expires_at = now() - interval '1 second'
    where id = (select session_id from web_push_subscriptions where endpoint = ${hy.subscriptions[1]!.endpoint})`;
  const id = (await server.api(hy.token, 'POST', '/approvals', { question: 'Anyone?' })).body.todo
    .id as number;
  await pause(800);
  expect(hy.received()).toEqual([]);
  expect(await pushEvents(hy.token, id)).toEqual([]);
});

test('the VAPID key pair is made once and shared by every process; pages offer its public key', async () => {
  const keys = await server.sql`select public_key from web_push_keys`;
  expect(keys).toHaveLength(1);
  const iv = await humanWithBrowsers(1);
  const page = await (
    await fetch(server.url, { headers: { cookie: iv.sessions[0]!.cookie } })
  ).text();
  expect(page).toContain(`data-push-key="${keys[0]!.public_key}"`);
  const fromSecond = await (
    await fetch(second.url, { headers: { cookie: iv.sessions[0]!.cookie } })
  ).text();
  expect(fromSecond).toContain(`data-push-key="${keys[0]!.public_key}"`);
});

test('the fake push service’s checks can fail: another key’s signature, another browser’s keys', async () => {
  const subscription = push.subscribe();
  const other = webpush.generateVAPIDKeys();
  const send = (
    target: SubscriptionJson,
    vapidDetails: { publicKey: string; privateKey: string },
  ) =>
    webpush
      .sendNotification(target, '{"type":"approval"}', {
        vapidDetails: { subject: 'mailto:test@invalid', ...vapidDetails },
        agent: push.agent,
      })
      .then(
        (answer) => answer.statusCode,
        (error: { statusCode?: number }) => error.statusCode,
      );
  const rejected = push.rejected.length;
  // A key pair that is not the server's.
  expect(await send(subscription, other)).toBe(403);
  // The server's public key named, but signed with another private key.
  const publicKey = await vapidPublicKey(server);
  expect(await send(subscription, { publicKey, privateKey: other.privateKey })).toBe(403);
  // Encrypted for another browser's keys.
  const stranger = push.subscribe();
  expect(await send({ ...subscription, keys: stranger.keys }, other)).toBe(403);
  const [{ private_key }] = await server.sql<[{ private_key: string }]>`
    select private_key from web_push_keys`;
  expect(
    await send({ ...subscription, keys: stranger.keys }, { publicKey, privateKey: private_key }),
  ).toBe(400);
  expect(push.rejected.slice(rejected)).toEqual([
    'VAPID: the key is not the server’s',
    'VAPID: bad signature',
    'VAPID: the key is not the server’s',
    expect.stringMatching(/^payload: /),
  ]);
  // And the right ones pass.
  expect(await send(subscription, { publicKey, privateKey: private_key })).toBe(201);
});

test(`a human keeps at most ${SUBSCRIPTIONS_PER_HUMAN} browsers; the oldest goes first`, async () => {
  const jo = await humanWithBrowsers(1);
  const session = jo.sessions[0]!;
  const first = jo.subscriptions[0]!;
  for (let i = 0; i < SUBSCRIPTIONS_PER_HUMAN; i++)
    expect((await postSubscription(server, push.subscribe(), session)).status).toBe(204);
  const kept = await server.sql<{ endpoint: string }[]>`
    select s.endpoint from web_push_subscriptions s join principals p on p.id = s.principal_id
    where p.name = ${jo.name}`;
  expect(kept).toHaveLength(SUBSCRIPTIONS_PER_HUMAN);
  expect(kept.map((row) => row.endpoint)).not.toContain(first.endpoint);
});

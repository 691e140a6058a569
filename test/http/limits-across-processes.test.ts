import { createHmac, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { LimitSettings } from '../../src/platform/config/limit-settings.js';
import { readFixture } from '../github/deliver.js';
import { openEventStream, type EventStreamClient } from '../support/event-stream.js';
import { initializeRequest } from '../support/mcp-client.js';
import { startTestServer, WEBHOOK_SECRET, type TestServer } from '../support/test-server.js';

// The limits with two server processes on one schema, as two replicas behind a load balancer
// (README, Limits): failed authentications are counted in PostgreSQL, together; the rate and
// the slots, held in each process's memory, are each process's share of the setting.
let a: TestServer;
let b: TestServer;
let bob: string;
/** Streams alone: the rate's tests spend bob's buckets. */
let carol: string;

const limits: Partial<LimitSettings> = {
  authFailures: 3,
  trustProxy: ['loopback'],
  ratePerSecond: 10,
  streams: 4,
};
// Heartbeats every 100 ms: each process soon counts the other.
const deliveryTiming = { heartbeatMs: 100 };

beforeAll(async () => {
  a = await startTestServer({ limits, deliveryTiming, web: { signInAttemptLimit: 2 } });
  b = await startTestServer({
    limits,
    deliveryTiming,
    web: { signInAttemptLimit: 2 },
    schema: a.schema,
  });
  bob = (await a.api(a.adminToken, 'POST', '/humans', { name: 'bob' })).body.token as string;
  carol = (await a.api(a.adminToken, 'POST', '/humans', { name: 'carol' })).body.token as string;
  // Until each counts the other (polled here: expect.poll is for tests).
  for (const server of [a, b]) while ((await liveProcesses(server)) !== 2) await sleep(50);
});
afterAll(async () => {
  await b?.stop();
  await a?.stop();
});

/** The processes a server shares its limits among, as /metrics says. */
async function liveProcesses(server: TestServer): Promise<number | undefined> {
  const text = await fetch(`${server.url}/metrics`, {
    // The first process's admin: one database, one admin (the second has no credentials file).
    headers: { authorization: `Bearer ${a.adminToken}` },
  }).then((response) => response.text());
  const match = /^switchboard_live_processes (\d+)$/m.exec(text);
  return match ? Number(match[1]) : undefined;
}

const from = (address: string) => ({ 'x-forwarded-for': address });
const bad = 'Bearer sbk_not-a-token-of-this-server-at-all-00000000000';
const todos = (server: TestServer, authorization: string, address = '192.0.2.1') =>
  fetch(`${server.url}/api/v1/todos`, { headers: { authorization, ...from(address) } });

test('regression: each process counted failed tokens alone, so two let an address fail twice the limit; they count together', async () => {
  const address = '203.0.113.7';
  expect((await todos(a, bad, address)).status).toBe(401);
  expect((await todos(b, bad, address)).status).toBe(401);
  expect((await todos(a, bad, address)).status).toBe(401);
  // The fourth, wherever it lands, is over the limit of 3.
  const over = await todos(b, bad, address);
  expect(over.status).toBe(429);
  expect(await over.json()).toMatchObject({ code: 'too_many_failures' });
  expect((await todos(a, bad, address)).status).toBe(429);
  // A valid token is still accepted, on both.
  expect((await todos(a, `Bearer ${bob}`, address)).status).toBe(200);
  expect((await todos(b, `Bearer ${bob}`, address)).status).toBe(200);
});

test('regression: webhook signatures and console sign-ins were counted per process too; counted together, a process reads at most one more failing body before it knows', async () => {
  const address = '203.0.113.8';
  const fixture = await readFixture('issues.labeled.switchboard');
  const deliver = (server: TestServer, signed: boolean) =>
    fetch(`${server.url}/api/github/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issues',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': `sha256=${createHmac('sha256', WEBHOOK_SECRET)
          .update(signed ? fixture : 'other bytes')
          .digest('hex')}`,
        ...from(address),
      },
      body: fixture,
    });
  expect((await deliver(a, false)).status).toBe(401);
  expect((await deliver(a, false)).status).toBe(401);
  // The third, on b, uses up the address's allowance: b refuses its bodies unread from now on.
  expect((await deliver(b, false)).status).toBe(401);
  expect((await deliver(b, true)).status).toBe(429);
  // a learns it from the next failure it counts: that body is read, then none.
  expect((await deliver(a, false)).status).toBe(401);
  expect((await deliver(a, true)).status).toBe(429);

  // Sign-in links that do not work: 2 per address, across both.
  const badLink = (server: TestServer) =>
    fetch(`${server.url}/sign-in/sbl_${'A'.repeat(43)}`, { headers: from(address) });
  expect((await badLink(a)).status).toBe(401);
  expect((await badLink(b)).status).toBe(401);
  expect((await badLink(a)).status).toBe(429);
});

test('regression: each process held a whole rate bucket per principal, so two let it send twice the rate; each takes its share', async () => {
  const post = (body: unknown, session?: string) =>
    fetch(`${a.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${bob}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(session ? { 'mcp-session-id': session } : {}),
      },
      body: JSON.stringify(body),
    });
  const initialized = await post(initializeRequest('batcher', 0));
  expect(initialized.status).toBe(200);
  const session = initialized.headers.get('mcp-session-id')!;
  // A batch of six JSON-RPC messages is more than a share's burst (10 a second / 2 = 5).
  const pings = Array.from({ length: 6 }, (_, i) => ({
    jsonrpc: '2.0',
    id: i + 1,
    method: 'ping',
  }));
  const batch = await post(pings, session);
  expect(batch.status).toBe(429);
  const refusal = (await batch.json()) as { error: { message: string } };
  expect(refusal.error.message).toContain('send at most 5 at a time');
  expect(refusal.error.message).toContain(
    'shared out among the live server processes: 5 a second on this one',
  );
});

test('regression: each process held a principal’s whole stream cap, so two let it open twice as many; each holds its share', async () => {
  const streams: EventStreamClient[] = [];
  try {
    // 4 per principal, 2 on each process.
    for (const server of [a, a, b, b]) streams.push(await openEventStream(server.url, carol));
    for (const server of [a, b]) {
      const third = await fetch(`${server.url}/api/v1/events`, {
        headers: { authorization: `Bearer ${carol}` },
      });
      expect(third.status).toBe(429);
      expect(((await third.json()) as { error: string }).error).toContain(
        'carol has 2 event streams open on this server process, its share of the 4 allowed per principal (SWITCHBOARD_MAX_STREAMS, shared out among the live server processes',
      );
    }
  } finally {
    for (const stream of streams) stream.close();
  }
});

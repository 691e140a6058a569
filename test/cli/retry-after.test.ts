import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createApiClient } from '../../src/client/api-client.js';
import { claimNextWaiting } from '../../src/client/claim-next-waiting.js';
import { ApiError } from '../../src/client/client-errors.js';
import { openWakeStream } from '../../src/client/open-wake-stream.js';
import { parseRetryAfter, RETRY_AFTER_CAP_MS, retryDelay } from '../../src/client/retry-delay.js';

// A server's Retry-After (its limit per principal's 429, a 503 while its database is away) is
// how long the client waits before asking again.

test('Retry-After in both of its forms, capped; anything else is no Retry-After', () => {
  const now = Date.parse('2026-12-01T10:00:00Z');
  expect(parseRetryAfter('7', now)).toBe(7000);
  expect(parseRetryAfter(' 0 ', now)).toBe(0);
  expect(parseRetryAfter('Tue, 01 Dec 2026 10:00:30 GMT', now)).toBe(30_000);
  // A date already past: ask again now.
  expect(parseRetryAfter('Tue, 01 Dec 2026 09:59:00 GMT', now)).toBe(0);
  expect(parseRetryAfter('86400', now)).toBe(RETRY_AFTER_CAP_MS);
  expect(parseRetryAfter(['3', '9'], now)).toBe(3000);
  for (const bad of [undefined, '', 'soon', '-5', '1.5'])
    expect(parseRetryAfter(bad, now), String(bad)).toBeUndefined();
});

test("the pause after a failure is the server's Retry-After when it gave one, else the backoff", () => {
  const limited = new ApiError(429, 'rate_limited', 'slow down', 7000);
  expect(retryDelay(0, 5000, limited)).toBe(7000);
  expect(retryDelay(3, 5000, new ApiError(429, 'rate_limited', 'slow down', 0))).toBe(0);
  for (const error of [new ApiError(503, 'database_unavailable', 'later'), new Error('x')]) {
    const pause = retryDelay(0, 5000, error);
    expect(pause).toBeGreaterThanOrEqual(250);
    expect(pause).toBeLessThanOrEqual(500);
  }
});

let fake: Server;
let url: string;
const claims: number[] = [];

beforeAll(async () => {
  fake = createServer((req, res) => {
    req.resume();
    if (req.url?.startsWith('/api/v1/events')) {
      // No stream: every wait is a poll, so only the claims' answers set the pace.
      res.writeHead(404, { 'content-type': 'application/json' });
      return res.end('{"error":"no route","code":"not_found"}');
    }
    claims.push(Date.now());
    if (claims.length === 1) {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '2' });
      return res.end('{"error":"over the limit: wait 2 s","code":"rate_limited"}');
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ todo: { id: 7, queue: 'q', lease_token: 'lt_x' } }));
  });
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
});
afterAll(async () => {
  fake.closeAllConnections();
  await new Promise((resolve) => fake.close(resolve));
});

test('regression: a 429 ended a waiting claim at once, and its Retry-After was not waited', async () => {
  const credentials = { url, token: 'sbk_x' };
  const wakes = openWakeStream(credentials, 'q');
  try {
    const todo = await claimNextWaiting(createApiClient(credentials), wakes, 'q', {
      deadline: Date.now() + 30_000,
    });
    expect(todo).toMatchObject({ id: 7 });
    expect(claims).toHaveLength(2);
    // Asked again no sooner than the server said (the clock's rounding aside).
    expect(claims[1]! - claims[0]!).toBeGreaterThanOrEqual(1950);
  } finally {
    wakes.close();
  }
});

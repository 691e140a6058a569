import { expect, test } from 'vitest';
import { startTestServer } from '../support/test-server.js';

test('health says 503 when the database does not answer, and metrics say so too', async () => {
  // Prometheus' token is checked in memory: a scrape works while the database is down.
  const server = await startTestServer({ metricsToken: 'prometheus-scrapes-this-0123' });
  try {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    await server.sql.end({ timeout: 1 });
    const response = await fetch(`${server.url}/healthz`);
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({
      error: 'the database is not answering',
      code: 'unavailable',
    });
    const metrics = await fetch(`${server.url}/metrics`, {
      headers: { authorization: 'Bearer prometheus-scrapes-this-0123' },
    });
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^switchboard_database_up 0$/m);
  } finally {
    await server.stop();
  }
});

test('closing ends open event streams and stops listening', async () => {
  const server = await startTestServer();
  const stream = await fetch(`${server.url}/api/v1/events`, {
    headers: { authorization: `Bearer ${server.adminToken}` },
  });
  const reader = stream.body!.getReader();
  await reader.read(); // the stream is open
  await server.stop();
  for (;;) {
    const { done } = await reader.read();
    if (done) break;
  }
  await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
});

test('with WEBHOOK_SECRET unset, every delivery is refused and nothing is stored', async () => {
  const server = await startTestServer({ webhookSecret: null });
  try {
    const response = await fetch(`${server.url}/api/github/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'ping',
        'x-github-delivery': '1',
      },
      body: '{}',
    });
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ code: 'webhooks_disabled' });
  } finally {
    await server.stop();
  }
});

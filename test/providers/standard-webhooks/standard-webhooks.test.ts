import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import { verifyStandardWebhook } from '../../../src/providers/standard-webhooks/verify-standard-webhook.js';
import { startTestServer, type TestServer } from '../../support/test-server.js';
import {
  addSource,
  countSourceRows,
  outcomeOf,
  postToSource,
  readSourceFixture,
  setRules,
  standardHeaders,
  type AddedSource,
} from '../support/sources.js';

let server: TestServer;
let source: AddedSource;
beforeAll(async () => {
  server = await startTestServer();
  source = await addSource(server, { kind: 'standard-webhooks', name: 'crm' });
});
afterAll(() => server.stop());
afterEach(() => vi.useRealTimers());

describe('the spec’s test vector, through the verifier', () => {
  // From the Standard Webhooks reference libraries' tests.
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const headers = {
    'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    'webhook-timestamp': '1614265330',
    'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  };
  const body = Buffer.from('{"test": 2432232314}');

  test('verifies at its own time', () => {
    vi.useFakeTimers({ now: 1614265330 * 1000 });
    expect(verifyStandardWebhook(body, headers, [secret])).toEqual({ ok: true });
  });

  test('one of several v1 signatures (a sender rotating its key) is enough', () => {
    vi.useFakeTimers({ now: 1614265330 * 1000 });
    const several = {
      ...headers,
      'webhook-signature': `v1,bm9wZQ== ${headers['webhook-signature']}`,
    };
    expect(verifyStandardWebhook(body, several, [secret])).toEqual({ ok: true });
  });

  test('stale by more than 5 minutes, or from the future: refused', () => {
    vi.useFakeTimers({ now: (1614265330 + 301) * 1000 });
    expect(verifyStandardWebhook(body, headers, [secret])).toMatchObject({
      ok: false,
      reason: /old/,
    });
    vi.useFakeTimers({ now: (1614265330 - 301) * 1000 });
    expect(verifyStandardWebhook(body, headers, [secret])).toMatchObject({
      ok: false,
      reason: /future/,
    });
  });

  test('another body: refused', () => {
    vi.useFakeTimers({ now: 1614265330 * 1000 });
    expect(verifyStandardWebhook(Buffer.from('{"test": 2432232315}'), headers, [secret]).ok).toBe(
      false,
    );
  });
});

describe('a source', () => {
  test('the event type is the title, attributed to the owner (trusted)', async () => {
    const body = await readSourceFixture('standard-webhooks', 'contact.created');
    const headers = await standardHeaders(body, source.secret);
    const sent = await postToSource(server, 'crm', body, headers, headers['webhook-id']);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const { body: me } = await server.api(server.adminToken, 'GET', '/whoami');
    expect(await outcomeOf(server, 'crm', sent.id)).toMatchObject({
      disposition: 'created',
      queue: 'events',
      kind: 'standard_webhooks.contact_created',
      title: 'contact.created',
      state: 'pending',
      source: 'standard-webhooks',
      // The human who added the source.
      attributed_to: me.principal.name,
    });
  });

  test('rules name the title, body, link and actor by JSON pointer; an actor not trusted is quarantined', async () => {
    await setRules(
      server,
      'crm',
      [
        'rules:',
        '  event:',
        '    types: [contact.created]',
        '    title: /data/fullName',
        '    body: /data/address',
        '    actor: /data/occupation',
      ].join('\n'),
    );
    const body = (await readSourceFixture('standard-webhooks', 'contact.created')).replace(
      'John Smith',
      'Jane Smith',
    );
    const headers = await standardHeaders(body, source.secret);
    const sent = await postToSource(server, 'crm', body, headers, headers['webhook-id']);
    expect(await outcomeOf(server, 'crm', sent.id)).toMatchObject({
      disposition: 'quarantined',
      title: 'contact.created: Jane Smith',
      body: '800 W NASA Pkwy, Webster, TX 77598, USA',
      attributed_to: 'Engineer, ACME',
      note: "Engineer, ACME is not on this source's trust.logins",
    });
  });

  test('a stale timestamp or a bad signature: 401, nothing stored', async () => {
    const body = await readSourceFixture('standard-webhooks', 'contact.created.thin');
    const before = await countSourceRows(server);
    const stale = await standardHeaders(
      body,
      source.secret,
      'msg_stale',
      new Date(Date.now() - 10 * 60_000),
    );
    expect((await postToSource(server, 'crm', body, stale, 'msg_stale')).status).toBe(401);
    const future = await standardHeaders(
      body,
      source.secret,
      'msg_future',
      new Date(Date.now() + 10 * 60_000),
    );
    expect((await postToSource(server, 'crm', body, future, 'msg_future')).status).toBe(401);
    const forged = await standardHeaders(
      body,
      `whsec_${Buffer.from('x'.repeat(32)).toString('base64')}`,
      'msg_f',
    );
    expect((await postToSource(server, 'crm', body, forged, 'msg_f')).status).toBe(401);
    expect(await countSourceRows(server)).toEqual(before);
  });

  test('an event type the rules do not list makes nothing', async () => {
    const body =
      '{"type":"contact.deleted","timestamp":"2022-11-03T20:26:10.344522Z","data":{"id":"1f81eb52"}}';
    const headers = await standardHeaders(body, source.secret);
    const sent = await postToSource(server, 'crm', body, headers, headers['webhook-id']);
    expect(await outcomeOf(server, 'crm', sent.id)).toMatchObject({ disposition: 'no_rule' });
  });
});

test('a payload with an empty type, and a link longer than a todo may hold: still a todo', async () => {
  await setRules(server, 'crm', ['rules:', '  event:', '    url: /data/url'].join('\n'));
  const body = JSON.stringify({
    type: '',
    data: { url: `https://example.com/${'a'.repeat(5000)}` },
  });
  const headers = await standardHeaders(body, source.secret);
  const sent = await postToSource(server, 'crm', body, headers, headers['webhook-id']);
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  const row = await outcomeOf(server, 'crm', sent.id);
  expect(row).toMatchObject({
    disposition: 'created',
    title: 'event',
    kind: 'standard_webhooks.event',
  });
  expect(row!.url).toHaveLength(2048);
});

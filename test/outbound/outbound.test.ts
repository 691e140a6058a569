import { createServer, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import {
  createOutbound,
  failureOf,
  isOutboundRefused,
  MAX_ANSWER_BYTES,
  type Outbound,
} from '../../src/platform/egress/create-egress.js';
import { createOutboundPolicy } from '../../src/platform/egress/egress-policy.js';
import { resolveNames } from '../support/resolve-names.js';

// The outbound module on its own, against real servers on 127.0.0.1 and the test's resolver.

describe('the policy', () => {
  const none = createOutboundPolicy([]);

  test('https to a public address or name passes; every address inside is refused, however written', () => {
    for (const url of [
      'https://hooks.example.com/x',
      'https://93.184.215.14/x',
      'https://[2606:4700::1111]/x',
      'https://[::ffff:93.184.215.14]/x',
    ])
      expect({ url, refused: none.urlRefusal(url) }).toEqual({ url, refused: null });
    const refused: [string, RegExp][] = [
      ['https://127.0.0.1/', /is 127\.0\.0\.1, a loopback address/],
      ['https://127.1/', /is 127\.0\.0\.1, a loopback address/],
      ['https://2130706433/', /is 127\.0\.0\.1, a loopback address/],
      ['https://0x7f000001/', /is 127\.0\.0\.1, a loopback address/],
      ['https://017700000001/', /is 127\.0\.0\.1, a loopback address/],
      ['https://10.1.2.3/', /a private address/],
      ['https://172.31.0.1/', /a private address/],
      ['https://192.168.0.1/', /a private address/],
      ['https://169.254.169.254/', /a link-local address/],
      ['https://100.100.100.200/', /a carrier-grade NAT address/],
      ['https://0.0.0.0/', /the unspecified address/],
      ['https://255.255.255.255/', /the broadcast address/],
      ['https://239.1.1.1/', /a multicast address/],
      ['https://192.0.2.1/', /a reserved address/],
      ['https://[::1]/', /a loopback address/],
      ['https://[::]/', /the unspecified address/],
      ['https://[fe80::1]/', /a link-local address/],
      ['https://[fd12:3456::1]/', /a unique-local address/],
      ['https://[ff05::2]/', /a multicast address/],
      ['https://[::ffff:10.0.0.1]/', /is ::ffff:a00:1, a private address/],
      ['https://[::ffff:169.254.169.254]/', /a link-local address/],
      ['https://[::127.0.0.1]/', /not a public address/],
      ['https://[64:ff9b::a00:1]/', /not a public address \(rfc6052\)/],
      ['https://localhost/', /names this machine \(localhost\)/],
      ['https://api.localhost./', /names this machine \(localhost\)/],
    ];
    for (const [url, reason] of refused) expect(none.urlRefusal(url), url).toMatch(reason);
  });

  test('plain http goes only where the allow list says; the URL is an http(s) URL without credentials', () => {
    expect(none.urlRefusal('http://hooks.example.com/')).toMatch(
      /^must be https: plain http goes only to addresses SWITCHBOARD_OUTBOUND_ALLOW allows, and it allows none$/,
    );
    expect(none.urlRefusal('http://93.184.215.14/')).toMatch(/^must be https/);
    expect(none.urlRefusal('ftp://example.com/')).toBe('must be an http(s) URL');
    expect(none.urlRefusal('not a url')).toBe('must be an http(s) URL');
    expect(none.urlRefusal('https://user:pw@example.com/')).toBe(
      'must not hold a user name or password',
    );
    const local = createOutboundPolicy(['127.0.0.1/32', '::1', '10.0.0.0/8']);
    expect(local.allow).toEqual(['127.0.0.1/32', '::1/128', '10.0.0.0/8']);
    for (const url of [
      'http://127.0.0.1:8080/',
      'http://127.1:8080/',
      'https://[::1]/',
      'https://[::ffff:127.0.0.1]/',
      'http://10.200.0.4/',
      'http://localhost:3000/',
      // a name: what it resolves to decides, when it is used
      'http://gitea.lan/',
    ])
      expect({ url, refused: local.urlRefusal(url) }).toEqual({ url, refused: null });
    expect(local.urlRefusal('https://127.0.0.2/')).toMatch(/a loopback address/);
    expect(local.urlRefusal('http://93.184.215.14/')).toMatch(/^must be https/);
    expect(local.addressRefusal('10.9.9.9', 'http:')).toBeNull();
    expect(local.addressRefusal('93.184.215.14', 'http:')).toMatch(/^must be https/);
    expect(local.addressRefusal('93.184.215.14', 'https:')).toBeNull();
    expect(() => createOutboundPolicy(['127.1/32'])).toThrow(/is not an address or a CIDR/);
  });
});

describe('requests', () => {
  let server: Server;
  let port: number;
  let hits: string[];
  let outbound: Outbound;
  let restore: (() => void) | undefined;

  beforeAll(async () => {
    server = createServer((req, res) => {
      hits.push(`${req.method} ${req.url} ${String(req.headers['private-token'] ?? '-')}`);
      if (req.url === '/moved') return res.writeHead(302, { location: '/landed' }).end();
      if (req.url === '/big') return res.end('x'.repeat(MAX_ANSWER_BYTES * 3));
      if (req.url === '/hang') return;
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    outbound = createOutbound({ allow: ['127.0.0.1/32'] });
    hits = [];
  });
  afterEach(() => {
    restore?.();
    restore = undefined;
    hits = [];
  });
  afterAll(async () => {
    await outbound.close();
    server.closeAllConnections();
    server.close();
  });

  test('an allowed address is reached; a redirect is an answer, not followed; the body read is bounded', async () => {
    const base = `http://127.0.0.1:${port}`;
    expect(await outbound.request(`${base}/hello`)).toMatchObject({ status: 200, body: 'ok' });
    const moved = await outbound.request(`${base}/moved`, { method: 'POST', body: '{}' });
    expect(moved).toMatchObject({ status: 302, headers: { location: '/landed' } });
    expect((await outbound.request(`${base}/big`)).body).toHaveLength(MAX_ANSWER_BYTES);
    expect(hits).toEqual(['GET /hello -', 'POST /moved -', 'GET /big -']);
  });

  test('a credential goes only to the origin it was given for', async () => {
    const home = `http://127.0.0.1:${port}`;
    const credential = { origin: home, headers: { 'private-token': 'tok' } };
    expect(await outbound.request(`${home}/notes`, { credential })).toMatchObject({ status: 200 });
    restore = resolveNames({ 'alias.example.test': ['127.0.0.1'] });
    // The same server by another name is another origin: nothing is sent.
    const elsewhere = outbound.request(`http://alias.example.test:${port}/notes`, { credential });
    await expect(elsewhere).rejects.toThrow(
      `a credential for ${home} is not sent to http://alias.example.test:${port}`,
    );
    expect(hits).toEqual(['GET /notes tok']);
  });

  test('every address a name resolves to is checked, before any connection', async () => {
    restore = resolveNames({
      'mixed.example.test': ['127.0.0.1', '10.0.0.7'],
      'public.example.test': ['93.184.215.14'],
      'six.example.test': ['fd00::7'],
    });
    const refused = async (url: string) => {
      const error = await outbound.request(url).then(
        () => null,
        (thrown: unknown) => thrown,
      );
      expect(isOutboundRefused(error), url).toBe(true);
      expect(failureOf(error)).toBe('unreachable');
      return (error as Error).message;
    };
    expect(await refused(`http://mixed.example.test:${port}/`)).toBe(
      'mixed.example.test resolves to 10.0.0.7, a private address: switchboard sends only to public addresses unless SWITCHBOARD_OUTBOUND_ALLOW allows it',
    );
    expect(await refused(`https://six.example.test:${port}/`)).toMatch(/a unique-local address/);
    // Public, but plain http: only allowed addresses get that.
    expect(await refused(`http://public.example.test:${port}/`)).toMatch(
      /^public\.example\.test must be https/,
    );
    expect(hits).toEqual([]);
  });

  test('the address checked is the address connected to: one lookup, however the name answers next', async () => {
    let lookups = 0;
    // A rebinding name: an allowed address first, one inside at every lookup after.
    restore = resolveNames({
      'rebind.example.test': () => (++lookups === 1 ? ['127.0.0.1'] : ['10.0.0.1']),
    });
    const fresh = createOutbound({ allow: ['127.0.0.1/32'] });
    try {
      const answer = await fresh.request(`http://rebind.example.test:${port}/pinned`);
      expect(answer.status).toBe(200);
      expect(lookups).toBe(1);
      expect(hits).toEqual(['GET /pinned -']);
    } finally {
      await fresh.close();
    }
  });

  test('a request that outlives its signal is a timeout', async () => {
    const error = await outbound
      .request(`http://127.0.0.1:${port}/hang`, { signal: AbortSignal.timeout(100) })
      .catch((thrown: unknown) => thrown);
    expect(failureOf(error)).toBe('timeout');
    expect(isOutboundRefused(error)).toBe(false);
  });

  test('the https agent (for web-push) refuses the same: a written address, a name resolving inside', async () => {
    const nothing = createOutbound({ allow: [] });
    restore = resolveNames({ 'inside.example.test': ['127.0.0.1'] });
    const attempt = (url: string) =>
      new Promise<unknown>((resolve) => {
        const req = httpsRequest(url, { agent: nothing.httpsAgent, method: 'POST' }, () =>
          resolve(null),
        );
        req.on('error', resolve);
        req.end();
      });
    try {
      for (const url of ['https://169.254.169.254/', `https://inside.example.test:${port}/`]) {
        const error = await attempt(url);
        expect(isOutboundRefused(error), url).toBe(true);
      }
      expect(hits).toEqual([]);
    } finally {
      await nothing.close();
    }
  });
});

import { request } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { initializeRequest } from '../support/mcp-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { signInByFetch } from '../web/support/push.js';

const METRICS_TOKEN = 'metrics-scraper-secret-0123456789';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

/** A request as a browser on a rebinding page sends it: any Host and Origin (fetch forbids both). */
function send(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: options.method ?? 'GET', headers: options.headers },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode!, headers: res.headers, text, json });
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/**
 * A request written on a raw socket, its request line as given (Node's client always writes the
 * origin form): the answer's status line and body.
 */
function sendRaw(
  server: TestServer,
  head: string,
  body = '',
): Promise<{ status: number; json: any }> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const [status] = /^HTTP\/1\.1 (\d{3})/.exec(text)?.slice(1) ?? [];
      const payload = text.slice(text.indexOf('\r\n\r\n') + 4);
      let json: unknown;
      try {
        json = JSON.parse(payload);
      } catch {
        json = undefined;
      }
      resolve({ status: Number(status), json });
    });
    // Written, not ended: the server hangs up once it answered (Connection: close).
    socket.write(
      `${head}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}

const INITIALIZE = JSON.stringify(initializeRequest('host-guard'));

function initialize(
  server: TestServer,
  headers: Record<string, string>,
  path = '/mcp',
): Promise<Answer> {
  return send(`${server.url}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${server.adminToken}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: INITIALIZE,
  });
}

const portOf = (server: TestServer) => new URL(server.url).port;

describe('bound to loopback, no public URL', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ metricsToken: METRICS_TOKEN });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('regression: /mcp answered initialize for Host: evil.example and Origin: http://evil.example (DNS rebinding)', async () => {
    const refused = await initialize(server, {
      host: 'evil.example',
      origin: 'http://evil.example',
    });
    expect(refused.status).toBe(403);
    expect(refused.json).toEqual({
      jsonrpc: '2.0',
      error: {
        code: -32000,
        message: expect.stringMatching(
          /^Forbidden: this server does not answer for the host evil\.example: /,
        ),
      },
      id: null,
    });
    expect(refused.headers['mcp-session-id']).toBeUndefined();

    // The host alone, as the MCP conformance suite's dns-rebinding-protection sends it.
    expect((await initialize(server, { host: 'evil.example.com' })).status).toBe(403);
    // A loopback Host but a foreign Origin: a page elsewhere, refused as the MCP spec requires.
    const foreign = await initialize(server, {
      host: `127.0.0.1:${portOf(server)}`,
      origin: 'http://evil.example',
    });
    expect(foreign.status).toBe(403);
    expect(foreign.json.error.message).toMatch(/another origin \(http:\/\/evil\.example\)/);
    expect((await initialize(server, { origin: 'null' })).status).toBe(403);

    // Every loopback name is answered (any port: a container's published port differs from
    // the bound one), with no Origin or the page's own.
    for (const host of [
      `127.0.0.1:${portOf(server)}`,
      `localhost:${portOf(server)}`,
      `LocalHost:${portOf(server)}`,
      '[::1]:8080',
      'localhost',
    ]) {
      const answer = await initialize(server, { host });
      expect(answer.status, host).toBe(200);
      expect(answer.headers['mcp-session-id'], host).toBeDefined();
    }
    const own = await initialize(server, {
      host: `localhost:${portOf(server)}`,
      origin: `http://localhost:${portOf(server)}`,
    });
    expect(own.status).toBe(200);
  });

  test('every path is refused for a foreign Host, before anything runs: JSON with a code', async () => {
    const before = await server.sql`select count(*)::int as n from todos`;
    for (const [method, path] of [
      ['GET', '/healthz'],
      ['GET', '/api/v1/whoami'],
      ['POST', '/api/v1/todos'],
      ['GET', '/'],
      ['GET', '/sign-in'],
      ['POST', '/api/github/webhooks'],
      ['GET', '/no-such-path'],
    ] as const) {
      const answer = await send(`${server.url}${path}`, {
        method,
        headers: {
          host: 'rebound.example:80',
          authorization: `Bearer ${server.adminToken}`,
          'content-type': 'application/json',
        },
        body: method === 'POST' ? JSON.stringify({ queue: 'q', title: 'rebound' }) : undefined,
      });
      expect(answer.status, path).toBe(403);
      expect(answer.json, path).toEqual({
        error: expect.stringMatching(
          /^this server does not answer for the host rebound\.example:80: .*SWITCHBOARD_PUBLIC_URL/,
        ),
        code: 'forbidden_host',
      });
    }
    expect(await server.sql`select count(*)::int as n from todos`).toEqual(before);
    // An address that is no name at all, and none.
    expect((await send(`${server.url}/healthz`, { headers: { host: '0.0.0.0' } })).status).toBe(
      403,
    );
    expect(
      (await send(`${server.url}/healthz`, { headers: { host: `x@127.0.0.1:1` } })).status,
    ).toBe(403);
    expect((await send(`${server.url}/healthz`)).status).toBe(200);
  });

  test('regression: /MCP, /Mcp and /mcP/ with a foreign Origin initialized a session (Express matched them in any case, the Origin check only /mcp)', async () => {
    for (const path of ['/MCP', '/Mcp', '/mcP/', '/MCP/']) {
      const refused = await initialize(server, { origin: 'https://evil.example' }, path);
      expect(refused.status, path).toBe(403);
      expect(refused.json.error.message, path).toMatch(
        /another origin \(https:\/\/evil\.example\)/,
      );
      expect(refused.headers['mcp-session-id'], path).toBeUndefined();
      // Without an Origin, only /mcp itself is MCP's.
      const other = await initialize(server, {}, path);
      expect(other.status, path).toBe(404);
      expect(other.headers['mcp-session-id'], path).toBeUndefined();
    }
    // Nor is /mcp spelt with an escape or a doubled slash: no route, so no session.
    for (const path of ['/%6Dcp', '/%6dcp', '//mcp']) {
      const other = await initialize(server, { origin: 'https://evil.example' }, path);
      expect(other.headers['mcp-session-id'], path).toBeUndefined();
      expect([403, 404], path).toContain(other.status);
    }
    expect((await initialize(server, {})).status).toBe(200);
  });

  test('regression: every route answered its path in any case (/API/V1/whoami, /HEALTHZ, /OAuth/token, /Agents); only its own spelling is answered', async () => {
    const auth = { authorization: `Bearer ${server.adminToken}` };
    for (const [method, path] of [
      ['GET', '/API/V1/whoami'],
      ['GET', '/api/V1/whoami'],
      ['GET', '/Api/v1/todos'],
      ['GET', '/HEALTHZ'],
      ['GET', '/Metrics'],
      ['POST', '/OAuth/token'],
      ['GET', '/.Well-Known/oauth-authorization-server'],
      ['POST', '/API/github/webhooks'],
      ['GET', '/Agents'],
      ['GET', '/Sign-In'],
    ] as const) {
      const answer = await send(`${server.url}${path}`, {
        method,
        headers: { ...auth, 'content-type': 'application/json' },
        body: method === 'POST' ? '{}' : undefined,
      });
      expect(answer.status, path).toBe(404);
    }
    expect((await send(`${server.url}/api/v1/whoami`, { headers: auth })).status).toBe(200);
  });

  test('regression: a request line in absolute form (GET http://evil.example/… with a loopback Host) was answered; its authority is checked like Host', async () => {
    const port = portOf(server);
    const before = await server.sql`select count(*)::int as n from todos`;
    for (const target of [
      'http://evil.example/healthz',
      `http://evil.example:${port}/api/v1/whoami`,
      'http://x@127.0.0.1/healthz',
      'https://evil.example/',
    ]) {
      const refused = await sendRaw(
        server,
        `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${server.adminToken}`,
      );
      expect(refused.status, target).toBe(403);
      expect(refused.json, target).toEqual({
        error: expect.stringMatching(/^this server does not answer for the host /),
        code: 'forbidden_host',
      });
    }
    const todo = await sendRaw(
      server,
      `POST http://evil.example/api/v1/todos HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${server.adminToken}\r\nContent-Type: application/json`,
      JSON.stringify({ queue: 'q', title: 'absolute' }),
    );
    expect(todo.status).toBe(403);
    expect(await server.sql`select count(*)::int as n from todos`).toEqual(before);
    const mcp = await sendRaw(
      server,
      `POST http://evil.example/mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${server.adminToken}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream`,
      INITIALIZE,
    );
    expect(mcp.status).toBe(403);
    expect(mcp.json).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 }, id: null });
    // Its own authority in absolute form is answered, as the origin form is.
    expect(
      (
        await sendRaw(
          server,
          `GET http://127.0.0.1:${port}/healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}`,
        )
      ).status,
    ).toBe(200);
    expect((await sendRaw(server, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}`)).status).toBe(
      200,
    );
  });

  test('regression: /metrics answered anyone at any Host; it asks for an admin’s token or SWITCHBOARD_METRICS_TOKEN', async () => {
    const metrics = (headers: Record<string, string>) => send(`${server.url}/metrics`, { headers });
    const human = (await server.api(server.adminToken, 'POST', '/humans', { name: 'mo' })).body
      .token as string;
    const agent = (await server.api(human, 'POST', '/agents', { name: 'mobot', queues: ['q'] }))
      .body.token as string;

    const none = await metrics({});
    expect(none.status).toBe(401);
    expect(none.json).toEqual({
      error: expect.stringMatching(/SWITCHBOARD_METRICS_TOKEN/),
      code: 'unauthenticated',
    });
    expect(none.headers['www-authenticate']).toBe('Bearer realm="switchboard metrics"');
    expect((await metrics({ authorization: 'Bearer sbk_not-a-token' })).status).toBe(401);
    expect((await metrics({ authorization: `Bearer ${METRICS_TOKEN}x` })).status).toBe(401);
    expect((await metrics({ authorization: `Bearer ${METRICS_TOKEN.slice(1)}` })).status).toBe(401);
    for (const token of [human, agent]) {
      const refused = await metrics({ authorization: `Bearer ${token}` });
      expect(refused.status).toBe(403);
      expect(refused.json.code).toBe('forbidden');
      expect(refused.text).not.toMatch(/switchboard_todos/);
    }
    for (const token of [server.adminToken, METRICS_TOKEN]) {
      const answer = await metrics({ authorization: `Bearer ${token}` });
      expect(answer.status).toBe(200);
      expect(answer.text).toMatch(/^switchboard_database_up 1$/m);
    }
    // The right token at a rebinding page's Host: refused all the same.
    expect(
      (await metrics({ authorization: `Bearer ${METRICS_TOKEN}`, host: 'evil.example' })).status,
    ).toBe(403);
  });

  test('regression: sign-in links, sources’ webhook URLs and a new agent’s .mcp.json were built from the request’s Host', async () => {
    const host = { host: `localhost:${portOf(server)}` };
    const link = await send(`${server.url}/api/v1/web/sign-in-links`, {
      method: 'POST',
      headers: { ...host, authorization: `Bearer ${server.adminToken}` },
    });
    expect(link.status).toBe(201);
    // The server's own address (no public URL is set), not the one the request named.
    expect(link.json.url).toMatch(new RegExp(`^${server.url}/sign-in/sbl_`));

    const source = await send(`${server.url}/api/v1/sources`, {
      method: 'POST',
      headers: {
        ...host,
        authorization: `Bearer ${server.adminToken}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ kind: 'gitea', name: 'forge' }),
    });
    expect(source.status).toBe(201);
    expect(source.json.source.url).toBe(`${server.url}/api/sources/forge/webhooks`);

    const session = await signInByFetch(server, server.adminToken);
    const vended = await send(`${server.url}/agents`, {
      method: 'POST',
      headers: {
        ...host,
        origin: `http://${host.host}`,
        cookie: session.cookie,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ _csrf: session.csrf, name: 'vended', queues: 'q' }).toString(),
    });
    expect(vended.status).toBe(200);
    expect(vended.text).toContain(`&quot;SWITCHBOARD_URL&quot;: &quot;${server.url}&quot;`);
    expect(vended.text).not.toContain('localhost');
  });
});

describe('with SWITCHBOARD_PUBLIC_URL', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ web: { publicUrl: 'https://switchboard.example.com' } });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('its host is answered (as a proxy passes it on), loopback names too, and every URL is built from it', async () => {
    for (const host of [
      'switchboard.example.com',
      'Switchboard.Example.COM',
      'switchboard.example.com:443',
      'switchboard.example.com.',
      `127.0.0.1:${portOf(server)}`,
    ]) {
      const link = await send(`${server.url}/api/v1/web/sign-in-links`, {
        method: 'POST',
        headers: { host, authorization: `Bearer ${server.adminToken}` },
      });
      expect(link.status, host).toBe(201);
      expect(link.json.url, host).toMatch(/^https:\/\/switchboard\.example\.com\/sign-in\/sbl_/);
    }
    for (const host of ['switchboard.example.com:8443', 'other.example.com', '192.0.2.1']) {
      const refused = await send(`${server.url}/healthz`, { headers: { host } });
      expect(refused.status, host).toBe(403);
      expect(refused.json.error, host).toMatch(/https:\/\/switchboard\.example\.com/);
    }
    const mcp = await initialize(server, {
      host: 'switchboard.example.com',
      origin: 'https://switchboard.example.com',
    });
    expect(mcp.status).toBe(200);
    expect(
      (
        await initialize(server, {
          host: 'switchboard.example.com',
          origin: 'https://switchboard.example.com.evil.example',
        })
      ).status,
    ).toBe(403);
  });

  test('regression: an http:// Origin passed /mcp when the public URL is https (the own origin came from the plain-http hop behind the proxy)', async () => {
    for (const origin of [
      'http://switchboard.example.com',
      'https://switchboard.example.com:8443',
      `http://127.0.0.1:${portOf(server)}`,
    ]) {
      const refused = await initialize(server, { host: 'switchboard.example.com', origin });
      expect(refused.status, origin).toBe(403);
      expect(refused.headers['mcp-session-id'], origin).toBeUndefined();
    }
    // A page on this machine is not the public URL's origin either.
    const local = await initialize(server, {
      host: `127.0.0.1:${portOf(server)}`,
      origin: `http://127.0.0.1:${portOf(server)}`,
    });
    expect(local.status).toBe(403);
    // Without an Origin (no browser) on this machine, as before.
    expect((await initialize(server, { host: `127.0.0.1:${portOf(server)}` })).status).toBe(200);
  });
});

describe('bound beyond loopback, no public URL', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ host: '0.0.0.0' });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('a request to an IP address is answered, a name is refused and told to set SWITCHBOARD_PUBLIC_URL', async () => {
    for (const host of [`192.0.2.7:${portOf(server)}`, '[2001:db8::7]:3000', 'localhost:1']) {
      expect((await send(`${server.url}/healthz`, { headers: { host } })).status, host).toBe(200);
    }
    const named = await send(`${server.url}/healthz`, {
      headers: { host: 'switchboard.lan:3000' },
    });
    expect(named.status).toBe(403);
    expect(named.json.error).toMatch(/set SWITCHBOARD_PUBLIC_URL/);
    // URLs come from the address it listens on, never from the Host.
    const link = await send(`${server.url}/api/v1/web/sign-in-links`, {
      method: 'POST',
      headers: {
        host: `192.0.2.7:${portOf(server)}`,
        authorization: `Bearer ${server.adminToken}`,
      },
    });
    expect(link.json.url).toMatch(new RegExp(`^${server.url}/sign-in/`));
  });
});

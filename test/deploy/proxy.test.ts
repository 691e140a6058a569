// Behind a proxy, on a public URL (README, Deploy): the README's nginx and Caddy configurations,
// run as documented in front of `switchboard up` started with the README's environment for a VM,
// on loopback ports, with TLS (a certificate made here). A client reaches them by the public
// name, from a loopback address of its own (127.0.0.2, 127.0.0.3, …), which the proxy sees as
// the client's: webhooks, console sign-in, streams and the client address the limits see are
// each checked through the proxy.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { LookupFunction } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sign } from '@octokit/webhooks-methods';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import postgres from 'postgres';
import { Agent, fetch as undiciFetch, type RequestInit, type Response } from 'undici';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';
import { readFixture } from '../github/deliver.js';
import { BIN, startCli, type RunningCli } from '../cli/support/run-cli.js';
import { runMark } from '../support/leftover-processes.js';
import { startOwnPostgres, type OwnPostgres } from '../support/own-postgres.js';
import { requireTool } from '../support/require-tool.js';
import { readmeBlock, substitute } from './support/readme-blocks.js';
import {
  isInstalled,
  makeCertificate,
  startCaddy,
  startNginx,
  type RunningProxy,
  type TestCertificate,
} from './support/reverse-proxy.js';

/** The public name, the test's own: its clients resolve it to the proxy on loopback. */
const NAME = 'switchboard.test';
/** Failed authentications per client address for these servers (the default is 100). */
const AUTH_FAILURE_LIMIT = 3;
/** How often every event stream writes `: ping` (src/surfaces/api/event-stream-routes.ts and its two peers). */
const STREAM_PING_SECONDS = 15;

let cert: TestCertificate;
let database: OwnPostgres;

requireTool('nginx', await isInstalled('nginx'), 'apt-get install -y nginx');
requireTool('Caddy', await isInstalled('caddy'), 'apt-get install -y caddy');

beforeAll(async () => {
  [cert, database] = await Promise.all([makeCertificate(NAME), startOwnPostgres()]);
});
afterAll(async () => {
  await database?.remove();
  await cert?.remove();
});

// ---------------------------------------------------------------------------------------------
// The server, as the README's VM section starts it

interface UpServer {
  cli: RunningCli;
  /** Where it listens (HOST:PORT of its environment). */
  port: number;
  /** The README's environment file, with this machine's particulars. */
  envFile: string;
  /** The environment it was started with: that file as systemd reads it, and the test's changes. */
  env: Record<string, string>;
  /** The first start's admin token, from the credentials file in its HOME. */
  adminToken: string;
  /** A pool on its database (the schema `switchboard`). */
  sql: postgres.Sql;
  /** Its log so far, one line each. */
  log(): string[];
  stop(): Promise<void>;
}

/** KEY=VALUE lines as systemd's EnvironmentFile= reads them (comments and blank lines skipped). */
function parseEnvironmentFile(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split('\n')
      .filter((line) => line.trim() && !line.trimStart().startsWith('#'))
      .map((line) => {
        const at = line.indexOf('=');
        return [line.slice(0, at).trim(), line.slice(at + 1).trim()];
      }),
  );
}

/**
 * `switchboard up` as the README's systemd unit runs it: the environment file written by the
 * README's own heredoc (the shell makes its secrets), the unit's `Environment=HOME=…` and
 * `ExecStart`, with the machine's particulars replaced — the database (a PostgreSQL of this
 * test's own, a database each), the port, the public URL — and `changes` on top.
 */
async function startFromReadme(
  publicUrl: string,
  changes: Record<string, string | undefined> = {},
): Promise<UpServer> {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-vm-'));
  const heredoc = /^cat >\/etc\/switchboard\/env <<END\n[\s\S]*?\nEND$/m.exec(
    readmeBlock('vm-env'),
  );
  if (!heredoc) throw new Error("the README's vm-env block no longer writes /etc/switchboard/env");
  const file = join(dir, 'env');
  await promisify(execFile)('bash', [
    '-c',
    heredoc[0].replace('/etc/switchboard/env', '"$1"'),
    'bash',
    file,
  ]);
  const env = parseEnvironmentFile(await readFile(file, 'utf8'));
  // What the test relies on is what the README says.
  expect(env).toMatchObject({
    SWITCHBOARD_EMBEDDED_POSTGRES: 'off',
    HOST: '127.0.0.1',
    SWITCHBOARD_PUBLIC_URL: 'https://switchboard.example.com',
    SWITCHBOARD_TRUST_PROXY: '1',
    SWITCHBOARD_SECRET_KEY: expect.stringMatching(/^[A-Za-z0-9+/]{43}=$/),
    WEBHOOK_SECRET: expect.stringMatching(/^[0-9a-f]{64}$/),
  });
  const unit = readmeBlock('systemd');
  expect(unit).toMatch(/^EnvironmentFile=\/etc\/switchboard\/env$/m);
  expect(unit).toMatch(/^ExecStart=\/usr\/local\/bin\/switchboard up$/m);
  expect(unit).toMatch(/^Environment=HOME=\/var\/lib\/switchboard$/m);

  // The machine's particulars, edited into the file as its reader would.
  const name = `sb_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = postgres(database.url, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const databaseUrl = Object.assign(new URL(database.url), { pathname: `/${name}` }).href;
  const port = await freePort();
  const particulars: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    SWITCHBOARD_PUBLIC_URL: publicUrl,
  };
  for (const key of Object.keys(particulars)) expect(env).toHaveProperty(key);
  const edited = (await readFile(file, 'utf8'))
    .split('\n')
    .map((line) => {
      const key = line.slice(0, line.indexOf('='));
      return key in particulars ? `${key}=${particulars[key]}` : line;
    })
    .join('\n');
  await writeFile(file, edited);
  const home = join(dir, 'home');
  const started = { ...parseEnvironmentFile(edited), HOME: home, ...changes };
  const cli = startCli(['up'], started, { lifetime: 'file' });
  await cli.waitFor(/switchboard is listening on /, 60_000);
  const credentials = JSON.parse(
    await readFile(join(home, '.config', 'switchboard', 'credentials.json'), 'utf8'),
  ) as { servers: Record<string, { token: string }> };
  const sql = postgres(databaseUrl, {
    max: 2,
    onnotice: () => {},
    connection: { search_path: 'switchboard' },
  });
  return {
    cli,
    port,
    envFile: file,
    env: Object.fromEntries(
      Object.entries(started).filter((entry): entry is [string, string] => !!entry[1]),
    ),
    adminToken: credentials.servers[`http://127.0.0.1:${port}`]!.token,
    sql,
    log: () => cli.stderr.split('\n').filter(Boolean),
    async stop() {
      await sql.end({ timeout: 1 });
      cli.child.kill('SIGTERM');
      await cli.done;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The proxies, as the README configures them

/** The README’s nginx site on `port`, with the test’s certificate, in front of the server on `upstream`. */
function nginxSite(port: number, upstream: number): string {
  return substitute(readmeBlock('nginx'), [
    ['listen 443 ssl http2;', `listen 127.0.0.1:${port} ssl http2;`],
    // No IPv6 here; the one listen above is the site's.
    ['    listen [::]:443 ssl http2;\n', ''],
    ['/etc/letsencrypt/live/switchboard.example.com/fullchain.pem', cert.cert],
    ['/etc/letsencrypt/live/switchboard.example.com/privkey.pem', cert.key],
    ['switchboard.example.com', NAME],
    ['127.0.0.1:3000', `127.0.0.1:${upstream}`],
  ]);
}

/** The README's Caddyfile, for the public name on `port`, with the test's certificate. */
function caddySite(port: number, upstream: number): string {
  return substitute(readmeBlock('caddy'), [
    // The one thing a real name does not need: Caddy would get its certificate itself.
    ['switchboard.example.com {', `${NAME}:${port} {\n\ttls ${cert.cert} ${cert.key}`],
    ['127.0.0.1:3000', `127.0.0.1:${upstream}`],
  ]);
}

// ---------------------------------------------------------------------------------------------
// Clients of the proxy

interface ProxyClient {
  /** A request to the public URL through the proxy (redirects are not followed). */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** The same as a fetch function with the Fetch API's types (for the MCP SDK). */
  fetchApi: typeof fetch;
  close(): Promise<void>;
}

/**
 * A client at `from`, a loopback address of its own, so that the proxy sees its requests come
 * from there. It resolves the public name to the proxy, and trusts the test's certificate only.
 */
function clientOf(publicUrl: string, from = '127.0.0.1'): ProxyClient {
  const lookup: LookupFunction = (_hostname, options, callback) => {
    if (options.all) (callback as any)(null, [{ address: '127.0.0.1', family: 4 }]);
    else callback(null, '127.0.0.1', 4);
  };
  const dispatcher = new Agent({
    localAddress: from,
    allowH2: true,
    connect: { ca: cert.pem, lookup },
  });
  const request = (url: string | URL, init: RequestInit = {}) =>
    undiciFetch(new URL(url, publicUrl), { redirect: 'manual', ...init, dispatcher });
  return {
    fetch: (path, init) => request(path, init),
    fetchApi: ((url: string | URL, init?: RequestInit) => request(url, init)) as typeof fetch,
    // Not close(), which would wait for a stream a failed test left open.
    close: () => dispatcher.destroy(),
  };
}

interface SseEvent {
  event: string;
  data: string;
}

/** An event stream opened through the proxy: its events as they arrive. */
async function openStream(
  client: ProxyClient,
  path: string,
  headers: Record<string, string>,
): Promise<{ response: Response; events: SseEvent[]; close(): void }> {
  const controller = new AbortController();
  // The server sends the headers at once: a proxy that holds them back holds the stream.
  const held = setTimeout(
    () => controller.abort(new Error(`${path}: the stream's headers were held back 10 s`)),
    10_000,
  );
  const response = await client
    .fetch(path, {
      headers: { accept: 'text/event-stream', ...headers },
      signal: controller.signal,
    })
    .finally(() => clearTimeout(held));
  expect(response.status).toBe(200);
  const events: SseEvent[] = [];
  void (async () => {
    const parsed = response
      .body!.pipeThrough(new TextDecoderStream())
      .pipeThrough(new EventSourceParserStream());
    try {
      for await (const { event, data } of parsed) events.push({ event: event ?? 'message', data });
    } catch {
      // aborted
    }
  })();
  return { response, events, close: () => controller.abort() };
}

/** A GitHub delivery of `size` bytes or more about issue `number`: its text padded out. */
async function largeDelivery(number: number, size: number): Promise<string> {
  const payload = JSON.parse(await readFixture('issues.labeled.switchboard'));
  payload.issue.number = number;
  payload.issue.body = `${payload.issue.body}\n${'x'.repeat(size)}`;
  return JSON.stringify(payload);
}

/** Cookies a response sets, by name: the attributes as sent. */
function setCookies(response: Response): Map<string, string> {
  return new Map(
    response.headers.getSetCookie().map((cookie) => [cookie.slice(0, cookie.indexOf('=')), cookie]),
  );
}

// ---------------------------------------------------------------------------------------------

const PROXIES = [
  {
    name: 'nginx',
    start: (port: number, upstream: number) => startNginx(nginxSite(port, upstream), port),
  },
  {
    name: 'Caddy',
    start: (port: number, upstream: number) => startCaddy(caddySite(port, upstream), port),
  },
];

describe('through the README’s proxy, `switchboard up` with the README’s environment for a VM', () => {
  let publicPort: number;
  let publicUrl: string;
  let server: UpServer;
  /** The console link `up` printed at its first start, until a test signs in with it. */
  let startLink: string | undefined;

  beforeAll(async () => {
    publicPort = await freePort();
    publicUrl = `https://${NAME}:${publicPort}`;
    server = await startFromReadme(publicUrl, {
      SWITCHBOARD_AUTH_FAILURE_LIMIT: String(AUTH_FAILURE_LIMIT),
      // "Sign in with GitHub" on: its first leg, to GitHub, is as far as a test without
      // GitHub goes.
      GITHUB_CLIENT_ID: 'Iv1.proxytest',
      GITHUB_CLIENT_SECRET: 'proxy-test-secret',
    });
    // Printed once the server listens, on its first start.
    const printed = /web console \(this link signs you in once, within 5 minutes\): (\S+)\n/;
    await server.cli.waitFor(printed);
    startLink = printed.exec(server.cli.stdout)![1];
  });
  afterAll(async () => {
    await server?.stop();
  });

  describe.each(PROXIES)('$name', ({ name, start }) => {
    let proxy: RunningProxy;
    let client: ProxyClient;
    const api = async (token: string, method: string, path: string, body?: unknown) => {
      const response = await client.fetch(`/api/v1${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    };

    beforeAll(async () => {
      // The same public address for both proxies, one after the other: the server's URL is one.
      proxy = await start(publicPort, server.port);
      client = clientOf(publicUrl);
    });
    afterAll(async () => {
      await client?.close();
      await proxy?.stop();
    });

    test('the server answers at the public URL, over TLS, through the proxy', async () => {
      const response = await client.fetch('/healthz');
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ status: 'ok' });
    });

    test('an admin token for your own machine, minted as the README says, works at the public URL', async () => {
      // As root on the VM: the environment file sourced into a shell of one's own (not the
      // service's HOME), then `switchboard admin token --url`.
      const home = await mkdtemp(join(tmpdir(), 'switchboard-root-'));
      try {
        const { stdout } = await promisify(execFile)(
          'bash',
          [
            '-c',
            'set -a; . "$1"; set +a; exec node "$2" admin token --url "$3" --json',
            'bash',
            server.envFile,
            BIN,
            publicUrl,
          ],
          { env: { PATH: process.env.PATH, HOME: home, ...runMark() } },
        );
        const minted = JSON.parse(stdout) as { url: string; token: string };
        expect(minted.url).toBe(publicUrl);
        expect((await api(minted.token, 'GET', '/todos')).status).toBe(200);
      } finally {
        await rm(home, { recursive: true, force: true });
      }
    });

    test('a signed GitHub delivery over 1 MB, sent to the public URL, becomes a todo', async () => {
      // nginx refuses a body over 1 MB unless told otherwise; GitHub's go up to 25 MB.
      const body = await largeDelivery(name === 'nginx' ? 101 : 102, 2 * 1024 * 1024);
      const id = randomUUID();
      const response = await client.fetch('/api/github/webhooks', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'issues',
          'x-github-delivery': id,
          'x-hub-signature-256': await sign(server.env.WEBHOOK_SECRET!, body),
        },
        body,
      });
      expect(response.status, await response.text()).toBe(200);
      const [delivery] = await server.sql<{ todo_id: number | null }[]>`
        select todo_id from deliveries where source = 'github' and delivery_id = ${id}`;
      expect(delivery?.todo_id).toBeTruthy();
      const { status, body: todo } = await api(
        server.adminToken,
        'GET',
        `/todos/${delivery!.todo_id}`,
      );
      expect(status).toBe(200);
      expect(todo.todo).toMatchObject({ queue: 'issues', kind: 'github.issues.labeled' });
    });

    test('the console: a sign-in link on the public URL, a Secure __Host- cookie, forms checked against the public origin', async () => {
      // The first time, the link the first start printed (README: journalctl … 'web console');
      // it signs in once, so then one minted as `switchboard open` does.
      let link = startLink;
      startLink = undefined;
      if (!link) {
        const minted = await api(server.adminToken, 'POST', '/web/sign-in-links');
        expect(minted.status).toBe(201);
        link = minted.body.url as string;
      }
      expect(link).toMatch(new RegExp(`^${publicUrl}/sign-in/sbl_[A-Za-z0-9_-]+$`));
      const signedIn = await client.fetch(new URL(link).pathname);
      expect(signedIn.status).toBe(303);
      expect(signedIn.headers.get('location')).toBe('/');
      // https at the public URL, though the hop from the proxy is plain HTTP.
      const cookie = setCookies(signedIn).get('__Host-switchboard_session');
      expect(cookie).toMatch(/; Path=\/(;|$)/);
      expect(cookie).toMatch(/; Secure(;|$)/);
      expect(cookie).toMatch(/; HttpOnly(;|$)/);
      expect(cookie).not.toMatch(/Domain=/i);
      const session = cookie!.slice(0, cookie!.indexOf(';'));

      const page = await client.fetch('/todos', { headers: { cookie: session } });
      expect(page.status).toBe(200);
      const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1];
      expect(csrf).toBeTruthy();

      const { body } = await api(server.adminToken, 'POST', '/todos', {
        queue: `console-${name.toLowerCase()}`,
        title: 'cancel me from the console',
      });
      const cancel = (origin: string) =>
        client.fetch(`/todos/${body.todo.id}/cancel`, {
          method: 'POST',
          headers: {
            cookie: session,
            origin,
            'content-type': 'application/x-www-form-urlencoded',
          },
          body: new URLSearchParams({ _csrf: csrf!, reason: 'through the proxy' }).toString(),
        });
      // The origin the plain hop would suggest is not the console's: refused, nothing changed.
      expect((await cancel(`http://${NAME}:${publicPort}`)).status).toBe(403);
      expect((await api(server.adminToken, 'GET', `/todos/${body.todo.id}`)).body.todo.state).toBe(
        'pending',
      );
      const canceled = await cancel(publicUrl);
      expect(canceled.status).toBe(303);
      expect((await api(server.adminToken, 'GET', `/todos/${body.todo.id}`)).body.todo.state).toBe(
        'canceled',
      );
    });

    test('OAuth and GitHub sign-in name the public URL in every address they give out', async () => {
      const metadata = await client.fetch('/.well-known/oauth-authorization-server');
      expect(metadata.status).toBe(200);
      expect(await metadata.json()).toMatchObject({
        issuer: publicUrl,
        authorization_endpoint: `${publicUrl}/oauth/authorize`,
        token_endpoint: `${publicUrl}/oauth/token`,
      });
      // An MCP client without a token is sent to the public URL's metadata.
      const unauthorized = await client.fetch('/mcp', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
      expect(unauthorized.status).toBe(401);
      expect(unauthorized.headers.get('www-authenticate')).toContain(
        `resource_metadata="${publicUrl}/.well-known/oauth-protected-resource/mcp"`,
      );

      const toGitHub = await client.fetch('/auth/github');
      expect(toGitHub.status).toBe(303);
      const authorize = new URL(toGitHub.headers.get('location')!);
      expect(authorize.origin).toBe('https://github.com');
      expect(authorize.searchParams.get('redirect_uri')).toBe(`${publicUrl}/auth/github/callback`);
      // The attempt's cookie comes back on GitHub's redirect to the public URL: Secure there.
      const attempt = setCookies(toGitHub).get('__Host-switchboard_github');
      expect(attempt).toMatch(/; Secure(;|$)/);
      expect(attempt).toMatch(/; SameSite=Lax(;|$)/);
    });

    test('event streams pass through unbuffered: the API’s, MCP’s and the console’s each get their event while still open', async () => {
      // An agent per stream: one todo rings one consumer of an agent's, not all of them.
      const agent = async (kind: string) => {
        const agentName = `${kind}-${name.toLowerCase()}`;
        const added = await api(server.adminToken, 'POST', '/agents', {
          name: agentName,
          queues: [agentName],
        });
        expect(added.status).toBe(201);
        return { name: agentName, queue: agentName, token: added.body.token as string };
      };
      const [sse, mcpAgent] = await Promise.all([agent('sse'), agent('mcp')]);

      // The API's stream.
      const events = await openStream(client, `/api/v1/events`, {
        authorization: `Bearer ${sse.token}`,
      });
      expect(events.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      await expect.poll(() => events.events.map((e) => e.event)).toContain('ready');

      // The console's page stream, with a session of its own.
      const link = (await api(server.adminToken, 'POST', '/web/sign-in-links')).body.url;
      const cookie = setCookies(await client.fetch(new URL(link).pathname)).get(
        '__Host-switchboard_session',
      )!;
      const live = await openStream(client, `/live?page=${encodeURIComponent('/todos')}`, {
        cookie: cookie.slice(0, cookie.indexOf(';')),
      });
      await expect.poll(() => live.events.map((e) => e.event)).toContain('snapshot');

      // MCP's notification stream, opened by a real MCP client through the proxy.
      const mcp = new Client({ name: 'proxy-test', version: '1.0.0' });
      const heard: { todo_id: number }[] = [];
      mcp.setNotificationHandler(LoggingMessageNotificationSchema, ({ params }) => {
        heard.push(params.data as { todo_id: number });
      });
      await mcp.connect(
        new StreamableHTTPClientTransport(new URL('/mcp', publicUrl), {
          requestInit: { headers: { authorization: `Bearer ${mcpAgent.token}` } },
          fetch: client.fetchApi,
        }),
      );
      try {
        await expect
          .poll(
            async () =>
              (
                await server.sql`
                  select 1 from consumer_sessions where principal = ${mcpAgent.name} and path = 'mcp_log'`
              ).length,
          )
          .toBe(1);

        const create = async (queue: string) =>
          (await api(server.adminToken, 'POST', '/todos', { queue, title: `wake on ${queue}` }))
            .body.todo.id as number;
        const [forSse, forMcp] = await Promise.all([create(sse.queue), create(mcpAgent.queue)]);
        // No stream has ended: what arrives was passed on as it was written.
        await expect
          .poll(() =>
            events.events.filter((e) => e.event === 'wake').map((e) => JSON.parse(e.data).todo_id),
          )
          .toContain(forSse);
        await expect.poll(() => heard.map((wake) => wake.todo_id)).toContain(forMcp);
        await expect
          .poll(() =>
            live.events.some((e) => e.event === 'new' && e.data.includes(`wake on ${sse.queue}`)),
          )
          .toBe(true);
      } finally {
        events.close();
        live.close();
        await mcp.close();
      }
    });

    test('the client address the limits count is the client’s own, not the proxy’s, and a client cannot name another', async () => {
      const mallory = clientOf(publicUrl, name === 'nginx' ? '127.0.0.2' : '127.0.0.4');
      const alice = clientOf(publicUrl, name === 'nginx' ? '127.0.0.3' : '127.0.0.5');
      const badToken = (from: ProxyClient, claimed?: string) =>
        from
          .fetch('/api/v1/todos', {
            headers: {
              authorization: 'Bearer sbk_not-a-token',
              // A client naming another's address: the proxy replaces it with the client's own.
              ...(claimed ? { 'x-forwarded-for': claimed } : {}),
            },
          })
          .then((response) => response.status);
      try {
        for (let i = 0; i < AUTH_FAILURE_LIMIT; i++)
          expect(await badToken(mallory, `10.0.0.${i + 1}`)).toBe(401);
        // Past the limit for mallory's address, whatever it claims.
        expect(await badToken(mallory, '10.0.0.99')).toBe(429);
        expect(await badToken(mallory)).toBe(429);
        // alice, behind the same proxy, is counted apart.
        expect(await badToken(alice)).toBe(401);
      } finally {
        await mallory.close();
        await alice.close();
      }
    });
  });
});

describe('nginx from the README in front of a server without SWITCHBOARD_TRUST_PROXY', () => {
  let publicUrl: string;
  let server: UpServer;
  let proxy: RunningProxy;

  beforeAll(async () => {
    const publicPort = await freePort();
    publicUrl = `https://${NAME}:${publicPort}`;
    server = await startFromReadme(publicUrl, {
      SWITCHBOARD_TRUST_PROXY: undefined,
      SWITCHBOARD_AUTH_FAILURE_LIMIT: String(AUTH_FAILURE_LIMIT),
    });
    proxy = await startNginx(nginxSite(publicPort, server.port), publicPort);
  });
  afterAll(async () => {
    await proxy?.stop();
    await server?.stop();
  });

  test('the limits count the proxy’s address: one client’s failures count against everyone behind it', async () => {
    const mallory = clientOf(publicUrl, '127.0.0.6');
    const alice = clientOf(publicUrl, '127.0.0.7');
    const badToken = (from: ProxyClient) =>
      from
        .fetch('/api/v1/todos', { headers: { authorization: 'Bearer sbk_not-a-token' } })
        .then((response) => response.status);
    try {
      for (let i = 0; i < AUTH_FAILURE_LIMIT; i++) expect(await badToken(mallory)).toBe(401);
      expect(await badToken(mallory)).toBe(429);
      expect(await badToken(alice)).toBe(429);
    } finally {
      await mallory.close();
      await alice.close();
    }
  });

  test('regression: behind a proxy without SWITCHBOARD_TRUST_PROXY, an OAuth request wrote a stack trace to the log; it says once, in its own words, what to set', async () => {
    const client = clientOf(publicUrl);
    try {
      for (let i = 0; i < 2; i++) {
        // The MCP SDK's registration endpoint, rate-limited per address by express-rate-limit.
        const registered = await client.fetch('/oauth/register', {
          method: 'POST',
          // The standard header a client may send as well, which Express does not read.
          headers: { 'content-type': 'application/json', forwarded: 'for=198.51.100.7' },
          body: JSON.stringify({
            client_name: `proxy test ${i}`,
            redirect_uris: ['http://127.0.0.1:8976/callback'],
            token_endpoint_auth_method: 'none',
          }),
        });
        expect(registered.status).toBe(201);
      }
      expect((await client.fetch('/healthz')).status).toBe(200);
    } finally {
      await client.close();
    }
    // Every line of the log is one of pino's JSON lines: no stack trace, nothing else.
    const lines = server.log();
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    const warnings = lines
      .map((line) => JSON.parse(line) as { level: number; msg: string })
      .filter((entry) => entry.msg.includes('X-Forwarded-For'));
    expect(warnings).toEqual([
      expect.objectContaining({
        level: 40,
        msg: expect.stringContaining('SWITCHBOARD_TRUST_PROXY'),
      }),
    ]);
  });
});

test('the README’s nginx read timeout outlasts the streams’ pings', () => {
  const timeout = /^\s*proxy_read_timeout (\d+)s;/m.exec(readmeBlock('nginx'));
  expect(timeout, 'the nginx block sets proxy_read_timeout in seconds').toBeTruthy();
  // Two pings lost in a row still leave the stream open.
  expect(Number(timeout![1])).toBeGreaterThan(2 * STREAM_PING_SECONDS);
});

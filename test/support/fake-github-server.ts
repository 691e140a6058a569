import {
  createHash,
  createPublicKey,
  createVerify,
  generateKeyPairSync,
  randomBytes,
  randomUUID,
  type KeyObject,
} from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sign } from '@octokit/webhooks-methods';

/** The user signed in to the fake GitHub: the fixtures' repository owner. */
export const FAKE_USER = { id: 21031067, login: 'Codertocat' };
/** The repository the fake installs Apps on, and whose issue #1 its comment form is on. */
export const FAKE_REPOSITORY = 'Codertocat/Hello-World';

export interface FakeApp {
  id: number;
  slug: string;
  name: string;
  owner: string;
  clientId: string;
  clientSecret: string;
  webhookSecret: string;
  privateKey: string;
  publicKey: KeyObject;
  hookUrl: string;
  redirectUrl: string;
  callbackUrls: string[];
  events: string[];
  permissions: Record<string, string>;
}

/** One attempt in an App's delivery log (`GET /app/hook/deliveries`). */
export interface FakeAttempt {
  id: number;
  guid: string;
  delivered_at: string;
  redelivery: boolean;
  duration: number;
  status: string;
  status_code: number;
  event: string;
  action: string | null;
  installation_id: number | null;
  repository_id: number | null;
}

/** A request to the fake's API, as the fake saw it. */
export interface FakeRequest {
  method: string;
  /** Without the /api/v3 prefix, as on api.github.com. */
  path: string;
  /** Who asked: `jwt:<app id>`, `installation:<id>`, `user:<login>`, or `anonymous`. */
  as: string;
}

export interface FakeGitHubServer {
  /** http://127.0.0.1:PORT: the web origin (forms, OAuth, install pages). */
  url: string;
  /** GHE_HOST and GHE_PROTOCOL, as switchboard (and Probot) read them. */
  env: { GHE_HOST: string; GHE_PROTOCOL: 'http' };
  /** Where switchboard finds it: its web origin and its API (`/api/v3`, as a GitHub Enterprise Server). */
  host: { web: string; api: string };
  apps: Map<number, FakeApp>;
  /** Every manifest posted to the "new App" page, with the state and organization it came with. */
  manifests: { manifest: Record<string, unknown>; state: string | null; org: string | null }[];
  /** Every API request, in order. */
  requests: FakeRequest[];
  /** Every write GitHub took (reactions, comments), as `POST <path> <json body>`, in order. */
  writes: string[];
  /** Every App's delivery log, newest first. */
  attempts: FakeAttempt[];
  /** Registers an App from a manifest, as clicking "Create GitHub App" does: the code for it. */
  createApp(
    manifest: Record<string, unknown>,
    options?: { org?: string | null; name?: string },
  ): string;
  /** Installs an App on the fake repository's account: the installation's id. */
  install(appId: number): number;
  /**
   * Sends an event to the App's webhook URL as GitHub does (its delivery id, signed with the
   * App's webhook secret), logs the attempt with the answer, and returns it. With
   * `reach: false` the attempt is only logged, as failed to connect (reconcile finds it).
   */
  deliver(
    appId: number,
    event: string,
    payload: Record<string, unknown>,
    options?: { reach?: boolean; guid?: string },
  ): Promise<{ guid: string; status: number }>;
  /** A comment on the fake repository's issue #1 (`issue_comment.created`), as `deliver` sends it. */
  comment(appId: number, text: string): Promise<{ guid: string; status: number }>;
  /**
   * A smee.io channel on the fake (`WEBHOOK_PROXY_URL`): what is posted to it goes to whoever
   * listens to it (server-sent events, as smee.io sends them), and is lost when nobody does.
   */
  channel(name: string): string;
  /** How many listen to a channel now. */
  listening(name: string): number;
  /** Resolves once every redelivery asked for so far has been sent. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

const FIXTURES = new URL('../fixtures/github/', import.meta.url);

/**
 * A GitHub (as a GitHub Enterprise Server: its web pages at the root, its REST API under
 * /api/v3) served over HTTP on 127.0.0.1, for the whole App path without the network: the
 * manifest flow's "new App" page and the code's conversion, installations and their tokens
 * (App JWTs checked against each App's own key), write-backs, the App's delivery log and
 * redeliveries, OAuth sign-in with PKCE, and deliveries signed with each App's webhook secret.
 * Point switchboard at it with GHE_HOST and GHE_PROTOCOL (`env`). Tests use it through this
 * module; `npm run fake-github` runs it for a person to try the App path offline.
 */
export async function startFakeGitHubServer(
  options: { port?: number } = {},
): Promise<FakeGitHubServer> {
  const apps = new Map<number, FakeApp>();
  const manifestCodes = new Map<string, number>();
  const installations = new Map<number, { appId: number; account: string }>();
  const installationTokens = new Map<string, number>();
  const oauthCodes = new Map<
    string,
    { clientId: string; redirectUri: string; challenge: string | null }
  >();
  const userTokens = new Set<string>();
  const events = new Map<string, { appId: number; event: string; body: string }>();
  const inFlight = new Set<Promise<unknown>>();
  const channels = new Map<string, Set<ServerResponse>>();
  /** Why an attempt failed, by its id: what a person trying the fake must see, beyond "→ 0". */
  const failures = new Map<number, string>();
  let nextAppId = 1000;
  let nextInstallationId = 1;
  let nextAttemptId = 5_000_000;

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) json(res, 500, { message: String(error) });
      else res.end();
    });
  });
  // Idle connections are closed by the client, never here: a server closing one just as the
  // client reuses it (Node's 5 s default, against fetch's 4 s, late under load) resets a request.
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  const fake: FakeGitHubServer = {
    url,
    env: { GHE_HOST: `127.0.0.1:${port}`, GHE_PROTOCOL: 'http' },
    host: { web: url, api: `${url}/api/v3` },
    apps,
    manifests: [],
    requests: [],
    writes: [],
    attempts: [],
    createApp(manifest, { org = null, name } = {}) {
      const hook = (manifest.hook_attributes ?? {}) as { url?: unknown };
      if (typeof hook.url !== 'string' || typeof manifest.redirect_url !== 'string')
        throw new Error('a manifest needs hook_attributes.url and redirect_url');
      const id = nextAppId++;
      const appName = name ?? `${nameOf(manifest)}-${id}`;
      // As GitHub hands it over: a PKCS#1 key.
      const { privateKey } = generateKeyPairSync('rsa', {
        modulusLength: 2048,
        privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
        publicKeyEncoding: { type: 'spki', format: 'pem' },
      });
      apps.set(id, {
        id,
        slug: appName.toLowerCase().replace(/[^a-z0-9]+/g, '-'),
        name: appName,
        owner: org ?? FAKE_USER.login,
        clientId: `Iv23fake${id}`,
        clientSecret: randomBytes(20).toString('hex'),
        webhookSecret: randomBytes(20).toString('hex'),
        privateKey,
        publicKey: createPublicKey(privateKey),
        hookUrl: hook.url,
        redirectUrl: manifest.redirect_url,
        callbackUrls: (manifest.callback_urls as string[] | undefined) ?? [],
        events: (manifest.default_events as string[] | undefined) ?? [],
        permissions: (manifest.default_permissions as Record<string, string> | undefined) ?? {},
      });
      const code = randomBytes(16).toString('hex');
      manifestCodes.set(code, id);
      return code;
    },
    install(appId) {
      const id = nextInstallationId++;
      installations.set(id, { appId, account: FAKE_REPOSITORY.split('/')[0]! });
      return id;
    },
    async deliver(appId, event, payload, { reach = true, guid = randomUUID() } = {}) {
      const app = apps.get(appId);
      if (!app) throw new Error(`no App ${appId}`);
      const body = JSON.stringify(payload);
      events.set(guid, { appId, event, body });
      return send(app, guid, event, body, { reach, redelivery: false });
    },
    async comment(appId, text) {
      const installation = [...installations].find(([, i]) => i.appId === appId)?.[0];
      if (installation === undefined) throw new Error(`App ${appId} is not installed`);
      const payload = JSON.parse(
        readFileSync(new URL('issue_comment.created.command.json', FIXTURES), 'utf8'),
      ) as Record<string, any>;
      payload.comment.body = text;
      payload.comment.id = 492700400 + fake.attempts.length + 1;
      payload.installation = { id: installation };
      return fake.deliver(appId, 'issue_comment', payload);
    },
    channel: (name) => `${url}/smee/${name}`,
    listening: (name) => channels.get(name)?.size ?? 0,
    async settled() {
      while (inFlight.size) await Promise.allSettled([...inFlight]);
    },
    async close() {
      await fake.settled();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  async function send(
    app: FakeApp,
    guid: string,
    event: string,
    body: string,
    { reach, redelivery }: { reach: boolean; redelivery: boolean },
  ): Promise<{ guid: string; status: number }> {
    let status = 0;
    let why: string | undefined = reach ? undefined : 'not sent';
    if (reach) {
      try {
        const answer = await fetch(app.hookUrl, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'GitHub-Hookshot/fake',
            'x-github-event': event,
            'x-github-delivery': guid,
            'x-github-hook-installation-target-id': String(app.id),
            'x-hub-signature-256': await sign(app.webhookSecret, body),
          },
          body,
        });
        const text = await answer.text();
        status = answer.status;
        if (status >= 300) why = text.slice(0, 200);
      } catch (error) {
        status = 0;
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        why = `${cause?.code ?? cause?.message ?? String(error)}, at ${app.hookUrl}`;
      }
    }
    const payload = JSON.parse(body) as {
      action?: string;
      installation?: { id?: number };
      repository?: { id?: number };
    };
    const id = nextAttemptId++;
    if (why !== undefined) failures.set(id, why);
    fake.attempts.unshift({
      id,
      guid,
      delivered_at: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      redelivery,
      duration: 0.01,
      status:
        status === 0 ? 'failed to connect to host' : status < 300 ? 'OK' : 'Invalid HTTP Response',
      status_code: status,
      event,
      action: payload.action ?? null,
      installation_id: payload.installation?.id ?? null,
      repository_id: payload.repository?.id ?? null,
    });
    return { guid, status };
  }

  /** One attempt as the fake's pages show it: the event, the answer, and why it failed. */
  function describeAttempt(attempt: FakeAttempt): string {
    const answer = attempt.status_code
      ? `${attempt.status_code} ${attempt.status}`
      : attempt.status;
    const why = failures.get(attempt.id);
    const event = [attempt.event, attempt.action].filter(Boolean).join('.');
    return escape(`${event} → ${answer}${why ? ` (${why})` : ''}`);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = new URL(req.url ?? '/', url);
    const path = target.pathname;
    const body = await readBody(req);
    if (path.startsWith('/api/v3/')) return api(req, res, path.slice('/api/v3'.length), body);

    // smee.io: a channel's listeners get each delivery posted to it, its headers and its body.
    const channel = /^\/smee\/([A-Za-z0-9_-]+)$/.exec(path)?.[1];
    if (channel && req.method === 'GET') {
      const listeners = channels.get(channel) ?? new Set<ServerResponse>();
      channels.set(channel, listeners);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write('event: ready\ndata: {}\n\n');
      listeners.add(res);
      res.on('close', () => listeners.delete(res));
      return;
    }
    if (channel && req.method === 'POST') {
      const forwarded = ['content-type', 'user-agent', 'x-github-event', 'x-github-delivery']
        .concat(['x-github-hook-installation-target-id', 'x-hub-signature-256'])
        .filter((name) => typeof req.headers[name] === 'string')
        .map((name) => [name, req.headers[name]]);
      const event = JSON.stringify({
        ...Object.fromEntries(forwarded),
        body: JSON.parse(body) as unknown,
        query: {},
        timestamp: Date.now(),
      });
      for (const listener of channels.get(channel) ?? []) listener.write(`data: ${event}\n\n`);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }

    // The manifest flow: the "new App" page the setup page's form posts to.
    const newApp = /^(?:\/organizations\/([^/]+))?\/settings\/apps\/new$/.exec(path);
    if (newApp && req.method === 'POST') {
      const org = newApp[1] ?? null;
      const state = target.searchParams.get('state');
      let manifest: Record<string, unknown>;
      try {
        manifest = JSON.parse(new URLSearchParams(body).get('manifest') ?? '') as Record<
          string,
          unknown
        >;
      } catch {
        return page(res, 422, 'Invalid manifest', '<p>The manifest is not JSON.</p>');
      }
      fake.manifests.push({ manifest, state, org });
      return page(
        res,
        200,
        'Create GitHub App',
        `<p>Register a GitHub App for <strong>${escape(org ?? FAKE_USER.login)}</strong> from this manifest.</p>
        <form method="post" action="/settings/apps/new/create">
          <input type="hidden" name="manifest" value="${escape(JSON.stringify(manifest))}">
          <input type="hidden" name="state" value="${escape(state ?? '')}">
          <input type="hidden" name="org" value="${escape(org ?? '')}">
          <label>GitHub App name <input name="name" value="${escape(`${nameOf(manifest)}-${nextAppId}`)}"></label>
          <button type="submit">Create GitHub App</button>
        </form>`,
      );
    }
    if (path === '/settings/apps/new/create' && req.method === 'POST') {
      const form = new URLSearchParams(body);
      const manifest = JSON.parse(form.get('manifest') ?? '{}') as Record<string, unknown>;
      const code = fake.createApp(manifest, {
        org: form.get('org') || null,
        name: form.get('name') || undefined,
      });
      const back = new URL(String(manifest.redirect_url));
      back.searchParams.set('code', code);
      if (form.get('state')) back.searchParams.set('state', form.get('state')!);
      res.writeHead(302, { location: back.toString() }).end();
      return;
    }

    // Installing an App: its page, and the button.
    const installPage = /^\/github-apps\/([^/]+)\/installations\/new$/.exec(path);
    if (installPage) {
      const app = [...apps.values()].find((a) => a.slug === installPage[1]);
      if (!app) return page(res, 404, 'Not Found', '<p>No such App.</p>');
      if (req.method === 'POST') {
        const id = fake.install(app.id);
        // As GitHub does when a person installs an App: an `installation` delivery, `created`.
        await fake.deliver(app.id, 'installation', installationCreated(id, app));
        return page(
          res,
          200,
          'Installed',
          `<p>${escape(app.name)} is installed on ${escape(FAKE_REPOSITORY)} (installation ${id}).</p>
          <p>Delivered: ${describeAttempt(fake.attempts[0]!)}</p>
          <p><a href="/${FAKE_REPOSITORY}/issues/1">Open issue #1</a> and comment on it.</p>`,
        );
      }
      return page(
        res,
        200,
        `Install ${app.name}`,
        `<p>Install <strong>${escape(app.name)}</strong> on ${escape(FAKE_REPOSITORY)}.</p>
        <form method="post"><button type="submit">Install</button></form>`,
      );
    }

    // The fake repository's issue #1: the write-backs it got, and a comment box.
    if (path === `/${FAKE_REPOSITORY}/issues/1`) {
      const installed = [...installations.values()].at(-1);
      if (req.method === 'POST' && installed) {
        const text = new URLSearchParams(body).get('body') ?? '';
        await fake.comment(installed.appId, text);
        res.writeHead(303, { location: path }).end();
        return;
      }
      const list = fake.writes.map((write) => `<li><code>${escape(write)}</code></li>`).join('');
      return page(
        res,
        200,
        `${FAKE_REPOSITORY} #1`,
        `<p>What the App wrote back (reactions, comments):</p><ul>${list || '<li>nothing yet</li>'}</ul>
        ${
          installed
            ? `<form method="post"><label>Comment as ${FAKE_USER.login} <textarea name="body">/switchboard fix the typo in README.md</textarea></label>
               <button type="submit">Comment</button></form>`
            : '<p>No App is installed yet.</p>'
        }
        <p>Deliveries sent:</p><ul>${fake.attempts.map((a) => `<li>${describeAttempt(a)}</li>`).join('') || '<li>none</li>'}</ul>`,
      );
    }

    // OAuth: the user is signed in and has authorized already, so GitHub sends them straight back.
    if (path === '/login/oauth/authorize') {
      const clientId = target.searchParams.get('client_id') ?? '';
      const redirectUri = target.searchParams.get('redirect_uri') ?? '';
      const app = [...apps.values()].find((a) => a.clientId === clientId);
      if (!app || !app.callbackUrls.includes(redirectUri))
        return page(
          res,
          400,
          'Bad request',
          '<p>Unknown client, or a redirect_uri it does not have.</p>',
        );
      const code = randomBytes(10).toString('hex');
      oauthCodes.set(code, {
        clientId,
        redirectUri,
        challenge: target.searchParams.get('code_challenge'),
      });
      const back = new URL(redirectUri);
      back.searchParams.set('code', code);
      back.searchParams.set('state', target.searchParams.get('state') ?? '');
      res.writeHead(302, { location: back.toString() }).end();
      return;
    }
    if (path === '/login/oauth/access_token' && req.method === 'POST') {
      const given = (
        req.headers['content-type']?.includes('json')
          ? JSON.parse(body)
          : Object.fromEntries(new URLSearchParams(body))
      ) as Record<string, string | undefined>;
      const asked = oauthCodes.get(given.code ?? '');
      oauthCodes.delete(given.code ?? '');
      const app = [...apps.values()].find((a) => a.clientId === given.client_id);
      const verified =
        asked &&
        app &&
        app.clientSecret === given.client_secret &&
        asked.clientId === given.client_id &&
        asked.redirectUri === given.redirect_uri &&
        (asked.challenge === null ||
          createHash('sha256')
            .update(given.code_verifier ?? '')
            .digest('base64url') === asked.challenge);
      if (!verified) return json(res, 200, { error: 'bad_verification_code' });
      const token = `ghu_fake_${randomBytes(12).toString('hex')}`;
      userTokens.add(token);
      return json(res, 200, { access_token: token, token_type: 'bearer', scope: '' });
    }
    return page(res, 404, 'Not Found', '<p>The fake GitHub has no page here.</p>');
  }

  function api(req: IncomingMessage, res: ServerResponse, path: string, body: string): void {
    const method = req.method ?? 'GET';
    const as = caller(req.headers.authorization);
    fake.requests.push({ method, path, as: as.name });

    const conversion = /^\/app-manifests\/([^/]+)\/conversions$/.exec(path);
    if (conversion && method === 'POST') {
      const id = manifestCodes.get(conversion[1]!);
      manifestCodes.delete(conversion[1]!);
      const app = id === undefined ? undefined : apps.get(id);
      if (!app) return json(res, 404, { message: 'Not Found' });
      return json(res, 201, {
        ...appJson(app),
        client_id: app.clientId,
        client_secret: app.clientSecret,
        webhook_secret: app.webhookSecret,
        pem: app.privateKey,
      });
    }
    if (path === '/user' && method === 'GET') {
      if (as.kind !== 'user') return json(res, 401, { message: 'Bad credentials' });
      return json(res, 200, { id: FAKE_USER.id, login: FAKE_USER.login, type: 'User' });
    }

    // The App itself, by JWT.
    if (path.startsWith('/app')) {
      if (as.kind !== 'app')
        return json(res, 401, { message: 'A JSON web token could not be decoded' });
      const app = as.app;
      if (path === '/app' && method === 'GET') return json(res, 200, appJson(app));
      if (path === '/app/hook/config' && method === 'PATCH') {
        const given = JSON.parse(body || '{}') as { url?: unknown; secret?: unknown };
        if (typeof given.url === 'string') app.hookUrl = given.url;
        if (typeof given.secret === 'string') app.webhookSecret = given.secret;
        return json(res, 200, { url: app.hookUrl, content_type: 'json', insecure_ssl: '0' });
      }
      const tokenFor = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(path);
      if (tokenFor && method === 'POST') {
        const installation = installations.get(Number(tokenFor[1]));
        if (!installation || installation.appId !== app.id)
          return json(res, 404, { message: 'Not Found' });
        const token = `ghs_fake_${randomBytes(12).toString('hex')}`;
        installationTokens.set(token, Number(tokenFor[1]));
        return json(res, 201, {
          token,
          expires_at: new Date(Date.now() + 3_600_000).toISOString(),
          permissions: app.permissions,
          repository_selection: 'all',
        });
      }
      if (path === '/app/hook/deliveries' && method === 'GET') {
        const own = fake.attempts.filter((attempt) => events.get(attempt.guid)?.appId === app.id);
        return json(res, 200, own);
      }
      const again = /^\/app\/hook\/deliveries\/(\d+)\/attempts$/.exec(path);
      if (again && method === 'POST') {
        const attempt = fake.attempts.find((a) => a.id === Number(again[1]));
        const event = attempt && events.get(attempt.guid);
        if (!attempt || !event || event.appId !== app.id)
          return json(res, 404, { message: 'Not Found' });
        // Accepted now, sent moments later, as GitHub does.
        const sending = send(app, attempt.guid, event.event, event.body, {
          reach: true,
          redelivery: true,
        });
        inFlight.add(sending);
        void sending.finally(() => inFlight.delete(sending));
        return json(res, 202, {});
      }
      return json(res, 404, { message: 'Not Found' });
    }

    // A repository, by installation token.
    const repository = /^\/repos\/([^/]+\/[^/]+)\/(.+)$/.exec(path);
    if (repository) {
      if (as.kind !== 'installation') return json(res, 401, { message: 'Bad credentials' });
      const [, , rest] = repository;
      if (method === 'GET' && rest!.startsWith('contents/'))
        return json(res, 404, { message: 'Not Found' });
      if (
        method === 'POST' &&
        /^(issues\/\d+\/reactions|issues\/comments\/\d+\/reactions|issues\/\d+\/comments)$/.test(
          rest!,
        )
      ) {
        fake.writes.push(`POST ${path} ${body}`);
        return json(res, 201, { id: fake.writes.length });
      }
    }
    return json(res, 404, { message: 'Not Found' });
  }

  type Caller =
    | { kind: 'app'; app: FakeApp; name: string }
    | { kind: 'installation'; id: number; name: string }
    | { kind: 'user'; name: string }
    | { kind: 'anonymous'; name: string };

  function caller(authorization: string | undefined): Caller {
    const token = /^(?:bearer|token) (.+)$/i.exec(authorization ?? '')?.[1];
    if (!token) return { kind: 'anonymous', name: 'anonymous' };
    const installation = installationTokens.get(token);
    if (installation !== undefined)
      return { kind: 'installation', id: installation, name: `installation:${installation}` };
    if (userTokens.has(token)) return { kind: 'user', name: `user:${FAKE_USER.login}` };
    const app = verifiedApp(token);
    return app
      ? { kind: 'app', app, name: `jwt:${app.id}` }
      : { kind: 'anonymous', name: 'anonymous' };
  }

  /** The App whose key signed this JWT (RS256, `iss` its id, not expired), or undefined. */
  function verifiedApp(jwt: string): FakeApp | undefined {
    const [header, payload, signature] = jwt.split('.');
    if (!header || !payload || !signature) return undefined;
    let claims: { iss?: unknown; exp?: unknown };
    try {
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as typeof claims;
    } catch {
      return undefined;
    }
    const app = apps.get(Number(claims.iss));
    if (!app || typeof claims.exp !== 'number' || claims.exp * 1000 < Date.now()) return undefined;
    const good = createVerify('RSA-SHA256')
      .update(`${header}.${payload}`)
      .verify(app.publicKey, Buffer.from(signature, 'base64url'));
    return good ? app : undefined;
  }

  function appJson(app: FakeApp) {
    return {
      id: app.id,
      slug: app.slug,
      node_id: `A_fake${app.id}`,
      owner: { login: app.owner, id: FAKE_USER.id, type: 'User' },
      name: app.name,
      description: '',
      external_url: app.redirectUrl,
      // A GitHub Enterprise Server's Apps live under /github-apps/.
      html_url: `${url}/github-apps/${app.slug}`,
      created_at: new Date().toISOString(),
      updated_at: new Date().toISOString(),
      permissions: app.permissions,
      events: app.events,
    };
  }

  return fake;
}

const nameOf = (manifest: Record<string, unknown>) =>
  typeof manifest.name === 'string' ? manifest.name : 'app';

/** The `installation.created` delivery of an App just installed on the fake repository's account. */
function installationCreated(id: number, app: FakeApp): Record<string, unknown> {
  const payload = JSON.parse(
    readFileSync(new URL('installation.created.json', FIXTURES), 'utf8'),
  ) as Record<string, any>;
  Object.assign(payload.installation, {
    id,
    app_id: app.id,
    app_slug: app.slug,
    access_tokens_url: `/app/installations/${id}/access_tokens`,
    permissions: app.permissions,
    events: app.events,
  });
  return payload;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

function page(res: ServerResponse, status: number, title: string, body: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
  res.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)} · fake GitHub</title></head>` +
      `<body><h1>${escape(title)}</h1>${body}</body></html>`,
  );
}

function escape(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

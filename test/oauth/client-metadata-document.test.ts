import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { resolveNames } from '../support/resolve-names.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { addHuman } from '../web/support/console.js';
import {
  consoleSession,
  MemoryOAuthProvider,
  startCallback,
  type Callback,
  type ConsoleSession,
} from './support/oauth-client.js';

// A client whose id is the https URL of its metadata document (MCP 2025-11-25): switchboard
// fetches it through the outbound module — https, no inside address unless allowed, no redirect.
const HOST = 'client.example.test';
const INSIDE = 'inside.example.test';
let docs: Server;
let origin: string;
let server: TestServer;
let callback: Callback;
let session: ConsoleSession;
let restoreResolver: () => void;
const fetched: string[] = [];

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-cimd-'));
  await promisify(execFile)('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    join(dir, 'key.pem'),
    '-out',
    join(dir, 'cert.pem'),
    '-days',
    '2',
    '-subj',
    `/CN=${HOST}`,
    '-addext',
    `subjectAltName=DNS:${HOST},DNS:${INSIDE}`,
  ]);
  const [key, cert] = await Promise.all([
    readFile(join(dir, 'key.pem')),
    readFile(join(dir, 'cert.pem')),
  ]);
  await rm(dir, { recursive: true, force: true });
  callback = await startCallback();
  docs = createServer({ key, cert }, (req, res) => {
    fetched.push(req.url ?? '');
    const self = `${origin}${req.url}`;
    const document = (extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        client_id: self,
        client_name: 'Document client',
        redirect_uris: [callback.url],
        token_endpoint_auth_method: 'none',
        ...extra,
      });
    const answers: Record<string, () => void> = {
      '/client.json': () =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(document()),
      '/moved.json': () => res.writeHead(302, { location: `${origin}/client.json` }).end(),
      '/impostor.json': () =>
        res.writeHead(200).end(document({ client_id: `${origin}/client.json` })),
      '/large.json': () => res.writeHead(200).end(document({ padding: 'x'.repeat(6000) })),
      '/evil-redirect.json': () =>
        res.writeHead(200).end(document({ redirect_uris: ['http://example.com/steal'] })),
    };
    (answers[req.url ?? ''] ?? (() => res.writeHead(404).end()))();
  });
  await new Promise<void>((resolve) => docs.listen(0, '127.0.0.1', resolve));
  origin = `https://${HOST}:${(docs.address() as AddressInfo).port}`;
  // The documents' host is this machine; INSIDE is too, at an address no one allowed.
  restoreResolver = resolveNames({ [HOST]: ['127.0.0.1'], [INSIDE]: ['127.0.0.2'] });
  server = await startTestServer({ outbound: { allow: ['127.0.0.1/32'], ca: cert } });
  const ada = await addHuman(server, 'ada');
  await server.api(ada, 'POST', '/agents', { name: 'reviewer', queues: ['reviews'] });
  session = await consoleSession(server, ada);
});
afterAll(async () => {
  await server?.stop();
  restoreResolver?.();
  await callback?.close();
  await new Promise<void>((resolve) => (docs ? docs.close(() => resolve()) : resolve()));
});

test('the SDK client with a metadata document URL as its id signs in without registering, and works', async () => {
  const metadata = (await (
    await fetch(`${server.url}/.well-known/oauth-authorization-server`)
  ).json()) as Record<string, unknown>;
  expect(metadata.client_id_metadata_document_supported).toBe(true);

  const provider = new MemoryOAuthProvider(
    callback.url,
    'Document client',
    `${origin}/client.json`,
  );
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', server.url), {
    authProvider: provider,
  });
  await expect(
    new Client({ name: 'cimd', version: '1' }).connect(transport),
  ).rejects.toBeInstanceOf(UnauthorizedError);
  expect(provider.authorizationUrl!.searchParams.get('client_id')).toBe(`${origin}/client.json`);

  // The human, over HTTP with a console session, is shown the client and allows it.
  const asked = await fetch(provider.authorizationUrl!, { redirect: 'manual' });
  expect(asked.status).toBe(302);
  const consent = new URL(asked.headers.get('location')!).pathname;
  const page = await (await session.request(consent)).text();
  expect(page).toContain('Document client');
  expect(page).toContain('its address is its identity');
  const allowed = await session.request(consent, { decision: 'allow', agent: 'reviewer' });
  const code = new URL(allowed.headers.get('location')!).searchParams.get('code')!;
  await transport.finishAuth(code);

  const client = new Client({ name: 'cimd', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', server.url), { authProvider: provider }),
  );
  expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('claim_next');
  await client.close();
  expect(fetched).toContain('/client.json');
});

test.each([
  ['a redirect (never followed)', '/moved.json'],
  ['a document naming another client_id', '/impostor.json'],
  ['a document over 5 KB', '/large.json'],
  ['a document with a plain-http redirect_uri to another machine', '/evil-redirect.json'],
  ['a URL that answers 404', '/missing.json'],
])('%s: 400 invalid_client, nothing stored', async (_, path) => {
  const clients = await server.sql`select count(*)::int as n from oauth_clients`;
  const url = new URL(`${server.url}/oauth/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: `${origin}${path}`,
    redirect_uri: callback.url,
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  }).toString();
  const answer = await fetch(url, { redirect: 'manual' });
  expect(answer.status).toBe(400);
  expect(((await answer.json()) as { error: string }).error).toBe('invalid_client');
  expect(await server.sql`select count(*)::int as n from oauth_clients`).toEqual(clients);
});

test('a document at an address inside (not allowed) is never fetched', async () => {
  const before = fetched.length;
  const port = new URL(origin).port;
  const url = new URL(`${server.url}/oauth/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: `https://${INSIDE}:${port}/client.json`,
    redirect_uri: callback.url,
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  }).toString();
  const answer = await fetch(url, { redirect: 'manual' });
  expect(answer.status).toBe(400);
  expect(fetched.length).toBe(before);
});

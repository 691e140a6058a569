import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadServerConfig } from '../../src/platform/config/server-config.js';
import { loadSecretKey } from '../../src/platform/secrets/load-secret-key.js';
import { createSecretBox } from '../../src/platform/secrets/secret-box.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  addSource,
  giteaHeaders,
  postToSource,
  readSourceFixture,
  setRules,
  type AddedSource,
} from './support/sources.js';

let server: TestServer;
let source: AddedSource;
const logged: string[] = [];
const API_TOKEN = 'gitea_api_token_never_to_be_seen_0001';

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged.push(chunk.toString());
      done();
    },
  });
  server = await startTestServer({ log: pino({ level: 'trace' }, sink) });
  source = await addSource(server, {
    kind: 'gitea',
    name: 'code',
    api_url: 'https://gitea.example.com',
    api_token: API_TOKEN,
  });
  await setRules(server, 'code', 'trust:\n  logins: [unknwon]\n');
});
afterAll(() => server.stop());

async function deliver(secret: string, number: number) {
  const payload = JSON.parse(await readSourceFixture('gitea', 'pull_request.opened'));
  payload.number = payload.pull_request.number = number;
  const body = JSON.stringify(payload);
  const id = randomUUID();
  return postToSource(
    server,
    'code',
    body,
    giteaHeaders('gitea', 'pull_request', body, secret, id),
    id,
  );
}

describe('rotation', () => {
  test('the old secret keeps working through the grace period, then stops; the new one works', async () => {
    const old = source.secret;
    const { body } = await server.api(server.adminToken, 'POST', '/sources/code/rotate', {
      grace_seconds: 3600,
    });
    const fresh = body.secret as string;
    expect(fresh).toMatch(/^[0-9a-f]{64}$/);
    expect(fresh).not.toBe(old);
    expect(Date.parse(body.source.previous_secret_expires_at)).toBeGreaterThan(
      Date.now() + 3500_000,
    );
    expect((await deliver(old, 10)).status).toBe(200);
    expect((await deliver(fresh, 11)).status).toBe(200);

    // The grace period ends.
    await server.sql`update sources set previous_secret_expires_at = now() - interval '1 second' where name = 'code'`;
    const refused = await deliver(old, 12);
    expect(refused.status).toBe(401);
    expect((await deliver(fresh, 13)).status).toBe(200);
    source = { ...source, secret: fresh };
  });

  test('with no grace, the old secret stops at once', async () => {
    const old = source.secret;
    const { body } = await server.api(server.adminToken, 'POST', '/sources/code/rotate', {
      grace_seconds: 0,
    });
    expect((await deliver(old, 14)).status).toBe(401);
    expect((await deliver(body.secret, 15)).status).toBe(200);
    source = { ...source, secret: body.secret };
  });

  test('a second rotation ends the first one’s grace: only two secrets are ever accepted', async () => {
    const first = source.secret;
    const second = (await server.api(server.adminToken, 'POST', '/sources/code/rotate', {})).body
      .secret;
    const third = (await server.api(server.adminToken, 'POST', '/sources/code/rotate', {})).body
      .secret;
    expect((await deliver(first, 16)).status).toBe(401);
    expect((await deliver(second, 17)).status).toBe(200);
    expect((await deliver(third, 18)).status).toBe(200);
    source = { ...source, secret: third };
  });
});

describe('secrets', () => {
  test('are sealed at rest: the database holds no secret or token in the clear', async () => {
    const [row] = await server.sql<{ secret: Buffer; api_token: Buffer; rules: unknown }[]>`
      select secret, api_token, rules from sources where name = 'code'`;
    const stored = Buffer.concat([row!.secret, row!.api_token]).toString('latin1');
    expect(stored).not.toContain(source.secret);
    expect(stored).not.toContain(API_TOKEN);
    // Sealed with the server key; another key cannot open it (GCM's tag refuses it).
    const other = createSecretBox(Buffer.alloc(32, 7));
    expect(() => other.open(row!.secret)).toThrow();
  });

  test('are never in an API answer after they were first shown, nor in the log', async () => {
    const answers = [
      await server.api(server.adminToken, 'GET', '/sources'),
      await server.api(server.adminToken, 'GET', '/sources/code'),
      await server.api(server.adminToken, 'PUT', '/sources/code/rules', {
        rules: '',
        dry_run: true,
      }),
    ];
    for (const { status, body } of answers) {
      expect(status).toBe(200);
      const text = JSON.stringify(body);
      expect(text).not.toContain(source.secret);
      expect(text).not.toContain(API_TOKEN);
      expect(text).not.toMatch(/"secret"/);
    }
    expect(answers[0]!.body.sources[0]).toMatchObject({
      has_api_token: true,
      api_url: 'https://gitea.example.com',
    });
    // A bad signature and a good delivery both went through the log above.
    const log = logged.join('');
    expect(log).toMatch(/source delivery refused/);
    expect(log).toMatch(/source delivery recorded/);
    expect(log).not.toContain(source.secret);
    expect(log).not.toContain(API_TOKEN);
    expect(log).not.toContain('huge improvements');
  });

  test('the embedded default key is generated once into the data directory, mode 0600', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'switchboard-key-'));
    try {
      const first = await loadSecretKey({ secretKey: undefined, embedded: true, dataDir: dir });
      const again = await loadSecretKey({ secretKey: undefined, embedded: true, dataDir: dir });
      expect(first).toHaveLength(32);
      expect(again!.equals(first!)).toBe(true);
      expect((await stat(join(dir, 'secret.key'))).mode & 0o777).toBe(0o600);
      // With DATABASE_URL and no SWITCHBOARD_SECRET_KEY there is none (sources are off).
      expect(
        await loadSecretKey({ secretKey: undefined, embedded: false, dataDir: dir }),
      ).toBeUndefined();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('SWITCHBOARD_SECRET_KEY must be 32 bytes: a bad one stops the start, saying how to make one', () => {
    expect(() => loadServerConfig({ SWITCHBOARD_SECRET_KEY: 'too-short' })).toThrow(
      /SWITCHBOARD_SECRET_KEY must be 32 bytes, base64 or hex \(openssl rand -base64 32\)/,
    );
    const key = Buffer.alloc(32, 1).toString('base64');
    expect(loadServerConfig({ SWITCHBOARD_SECRET_KEY: key }).secretKey).toBe(key);
  });

  test('only an admin manages sources', async () => {
    const { body } = await server.api(server.adminToken, 'POST', '/humans', { name: 'grace' });
    for (const [method, path, payload] of [
      ['GET', '/sources', undefined],
      ['POST', '/sources', { kind: 'gitea', name: 'mine' }],
      ['POST', '/sources/code/rotate', {}],
      ['DELETE', '/sources/code', undefined],
    ] as const) {
      const refused = await server.api(body.token, method, path, payload);
      expect(refused.status, `${method} ${path}`).toBe(403);
    }
  });
});

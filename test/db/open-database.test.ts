import { spawnSync } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { openDatabase } from '../../src/platform/db/open-database.js';
import { startEmbeddedPostgres } from '../../src/platform/db/start-embedded-postgres.js';
import { silentLogger } from '../../src/platform/logger.js';

let dataDir: string;
beforeAll(async () => {
  const parent = await mkdtemp(join(tmpdir(), 'switchboard-open-'));
  await chmod(parent, 0o755); // as root, the postgres user must be able to enter it
  dataDir = join(parent, 'data');
});
afterAll(() => rm(join(dataDir, '..'), { recursive: true, force: true }));

test('without a URL, a real PostgreSQL starts in the data directory, keeps its data and stops', async () => {
  const first = await openDatabase({ dataDir, log: silentLogger });
  expect(first.embedded).toBe(true);
  const [{ server_version: version }] = await first.sql<
    [{ server_version: string }]
  >`show server_version`;
  expect(Number.parseInt(version, 10)).toBeGreaterThanOrEqual(15);
  await first.sql`create table if not exists public.kept (note text)`;
  await first.sql`insert into public.kept values ('still here')`;
  await first.close();
  await expect(first.sql`select 1`).rejects.toThrow();

  // The generated password is private to its owner.
  expect((await stat(join(dataDir, 'pg-password'))).mode & 0o077).toBe(0);
  expect((await readFile(join(dataDir, 'pg-password'), 'utf8')).trim()).toMatch(
    /^[A-Za-z0-9_-]{32}$/,
  );

  const second = await openDatabase({ dataDir, log: silentLogger });
  expect(await second.sql`select note from public.kept`).toEqual([{ note: 'still here' }]);
  await second.close();
});

test('a server left running by a killed process is stopped and replaced, not fought over', async () => {
  // Simulate the orphan: start a server on the cluster and "forget" to stop it. While its owner
  // (this process) lives, the directory is refused to anyone else…
  const orphan = await startEmbeddedPostgres(dataDir, silentLogger);
  await expect(openDatabase({ dataDir, log: silentLogger })).rejects.toThrow(
    /is in use by switchboard pid \d+/,
  );
  // …then its owner is gone: the record names a process that has exited.
  const gone = spawnSync(process.execPath, ['-e', '']).pid;
  const record = join(dataDir, 'owner.json');
  await writeFile(
    record,
    JSON.stringify({ ...JSON.parse(await readFile(record, 'utf8')), pid: gone }),
  );
  const next = await openDatabase({ dataDir, log: silentLogger });
  expect(await next.sql`select note from public.kept`).toEqual([{ note: 'still here' }]);
  await next.close();
  await orphan.stop(); // returns at once: that server is already gone
});

test('a cluster without its database (a first start cut short after initdb) gets it at the next start', async () => {
  const cluster = await startEmbeddedPostgres(dataDir, silentLogger);
  const admin = postgres(cluster.url.replace(/\/switchboard$/, '/postgres'), { max: 1 });
  await admin`drop database switchboard`;
  await admin.end();
  await cluster.stop();

  const reopened = await openDatabase({ dataDir, log: silentLogger });
  expect(await reopened.sql`select current_database() as name`).toEqual([{ name: 'switchboard' }]);
  await reopened.close();
});

test('a bad DATABASE_URL fails with a clear error and no secret', async () => {
  const attempt = openDatabase({
    databaseUrl: 'postgres://user:supersecret@127.0.0.1:1/nothing',
    dataDir,
    log: silentLogger,
  });
  const error = (await attempt.catch((e: unknown) => e)) as Error & { code?: string };
  expect(error).toBeInstanceOf(Error);
  expect(error.code).toBe('database_unusable');
  expect(error.message).toMatch(
    /^cannot use the PostgreSQL at DATABASE_URL \(127\.0\.0\.1:1\/nothing\): connect ECONNREFUSED .* — is it running/,
  );
  expect(error.message).not.toContain('supersecret');
});

test('a DATABASE_URL with a wrong password names the server and the refusal, not the password', async () => {
  const url = new URL(inject('databaseUrl'));
  url.password = 'not-the-password';
  const error = (await openDatabase({ databaseUrl: url.href, dataDir, log: silentLogger }).catch(
    (e: unknown) => e,
  )) as Error & { code?: string };
  expect(error.code).toBe('database_unusable');
  expect(error.message).toContain(`(${url.hostname}:${url.port}${url.pathname})`);
  expect(error.message).toMatch(/password authentication failed/);
  expect(error.message).not.toContain('not-the-password');
});

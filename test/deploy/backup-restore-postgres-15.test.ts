import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type postgres from 'postgres';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { openBackupFile } from '../../src/platform/db/backup-file.js';
import { connect } from '../../src/platform/db/open-database.js';
import { restoreBackup } from '../../src/platform/db/restore-backup.js';
import { writeBackup } from '../../src/platform/db/write-backup.js';
import { getTodoWithHistory } from '../../src/data/index.js';
import { silentLogger } from '../../src/platform/logger.js';
import { createSecretBox } from '../../src/platform/secrets/secret-box.js';
import { openSource } from '../../src/data/sources/source-store.js';
import { createOwnedDatabase, type OwnedDatabase } from '../support/owned-database.js';
import { createCast, type Cast } from '../support/principals.js';
import { fillSampleLedger, tableContents, type SampleLedger } from '../support/sample-ledger.js';
import { startDebianPostgres, type DebianPostgres } from '../support/start-debian-postgres.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

// "Any PostgreSQL ≥ 15": the embedded server is 18, the oldest supported is 15 (Debian's package).
let source: TestDatabase;
let cast: Cast;
let made: SampleLedger;
let postgres15: DebianPostgres;
let managed: OwnedDatabase;
let dir: string;
const pools: postgres.Sql[] = [];
const box = createSecretBox(randomBytes(32));

beforeAll(async () => {
  postgres15 = await startDebianPostgres(15);
  managed = await createOwnedDatabase(postgres15.url);
  source = await createTestDatabase();
  cast = await createCast(source.sql);
  made = await fillSampleLedger(source.sql, cast, box);
  dir = await mkdtemp(join(tmpdir(), 'switchboard-backup-15-'));
}, 120_000);
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end({ timeout: 5 })));
  await managed?.drop();
  await postgres15?.stop();
  await source?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function pool(url: string, schema: string): postgres.Sql {
  const sql = connect(url, { schema, max: 2, log: silentLogger });
  pools.push(sql);
  return sql;
}

async function copy(from: postgres.Sql, fromSchema: string, to: postgres.Sql, toSchema: string) {
  const file = join(dir, `${randomBytes(6).toString('hex')}.gz`);
  await writeBackup(from, fromSchema, file, { secretKeyId: null });
  const backup = await openBackupFile(file);
  try {
    return await restoreBackup(to, toSchema, backup);
  } finally {
    backup.close();
  }
}

test(
  'from PostgreSQL 18 to 15 (restored by a schema owner who is no superuser) and back: every row as it was',
  { timeout: 120_000 },
  async () => {
    const on15 = pool(managed.url, 'switchboard');
    const [{ server_version_num: version }] = await on15<
      [{ server_version_num: string }]
    >`show server_version_num`;
    expect(Number(version)).toBeGreaterThanOrEqual(150000);
    expect(Number(version)).toBeLessThan(160000);
    await copy(source.sql, source.schema, on15, 'switchboard');
    const original = await tableContents(source.sql, source.schema);
    expect(await tableContents(on15, 'switchboard')).toEqual(original);
    expect((await openSource(on15, box, 'forge'))?.secrets).toEqual([made.sourceSecret]);

    const back = `r_${randomBytes(6).toString('hex')}`;
    const on18 = pool(source.url, back);
    await copy(on15, 'switchboard', on18, back);
    expect(await tableContents(on18, back)).toEqual(original);
    expect(await getTodoWithHistory(on18, cast.bob, made.done)).toEqual(
      await getTodoWithHistory(source.sql, cast.bob, made.done),
    );
    await on18.unsafe(`drop schema ${back} cascade`);
  },
);

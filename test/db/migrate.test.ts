import { randomBytes } from 'node:crypto';
import { afterAll, expect, inject, test } from 'vitest';
import { migrate, readMigrations } from '../../src/platform/db/migrate.js';
import { connect } from '../../src/platform/db/open-database.js';
import { silentLogger } from '../../src/platform/logger.js';

const url = inject('databaseUrl');
const schema = `m_${randomBytes(6).toString('hex')}`;
const pools = Array.from({ length: 5 }, () => connect(url, { schema, max: 2, log: silentLogger }));
afterAll(async () => {
  await pools[0]!.unsafe(`drop schema if exists ${schema} cascade`);
  await Promise.all(pools.map((pool) => pool.end()));
});

test('migrations are numbered SQL files, applied in order', async () => {
  const migrations = await readMigrations();
  expect(migrations.length).toBeGreaterThan(0);
  expect(migrations.map((m) => m.version)).toEqual(
    [...migrations.map((m) => m.version)].sort((a, b) => a - b),
  );
  expect(new Set(migrations.map((m) => m.version)).size).toBe(migrations.length);
});

test('five processes migrating one schema at once apply each file exactly once', async () => {
  const results = await Promise.all(pools.map((pool) => migrate(pool, schema)));
  const all = await readMigrations();
  // One of them applied everything; the others found nothing left to do.
  expect(results.map((r) => r.applied.length).sort()).toEqual([0, 0, 0, 0, all.length]);
  const rows = await pools[0]!`select version from schema_migrations order by version`;
  expect(rows.map((r) => r.version)).toEqual(all.map((m) => m.version));
});

test('migrating again changes nothing', async () => {
  expect(await migrate(pools[1]!, schema)).toEqual({ applied: [] });
});

test('a migration edited after it was applied is refused', async () => {
  await pools[0]!`update schema_migrations set checksum = 'tampered' where version = 1`;
  await expect(migrate(pools[0]!, schema)).rejects.toThrow(/was edited after it was applied/);
});

import { createHash } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Sql, TransactionSql } from 'postgres';
import { PACKAGE_ROOT } from '../package-root.js';

const MIGRATIONS_DIR = join(PACKAGE_ROOT, 'migrations') + '/';
const FILE_NAME = /^(\d{4})_([a-z0-9_]+)\.sql$/;

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrateOptions {
  /** Tests of a migration: only the files numbered below this (the database before it). */
  before?: number;
  /** A restore: only these versions, the schema of the backup it loads. */
  only?: ReadonlySet<number>;
}

/**
 * Applies the numbered SQL files in `migrations/` to `schema`, each once, in order.
 *
 * Why a dozen lines instead of a migration library: the ones built on postgres.js want a folder
 * per migration, and the job is small — what matters is that it is all one transaction behind an
 * advisory lock (two processes starting at once apply each file exactly once; a failed file
 * leaves nothing half-applied) and that a file edited after it was applied is refused, because
 * landed migrations are append-only.
 */
export async function migrate(
  sql: Sql,
  schema: string,
  options: MigrateOptions = {},
): Promise<{ applied: string[] }> {
  return sql.begin((tx) => migrateInTransaction(tx, schema, options));
}

/** migrate's work, in a transaction of the caller's (a restore's, which loads rows after it). */
export async function migrateInTransaction(
  tx: TransactionSql,
  schema: string,
  options: MigrateOptions = {},
): Promise<{ applied: string[] }> {
  const migrations = (await readMigrations()).filter(
    (migration) =>
      (options.before === undefined || migration.version < options.before) &&
      (options.only === undefined || options.only.has(migration.version)),
  );
  await lockSchema(tx, schema);
  await tx`create schema if not exists ${tx(schema)}`;
  await tx`select set_config('search_path', ${schema}, true)`;
  await tx`
    create table if not exists schema_migrations (
      version integer primary key,
      name text not null,
      checksum text not null,
      applied_at timestamptz not null default now()
    )`;
  const done = new Map(
    (
      await tx<
        { version: number; checksum: string }[]
      >`select version, checksum from schema_migrations`
    ).map((row) => [row.version, row.checksum]),
  );
  const applied: string[] = [];
  for (const migration of migrations) {
    const checksum = done.get(migration.version);
    if (checksum === migration.checksum) continue;
    if (checksum !== undefined) {
      throw new Error(
        `migration ${migration.name} was edited after it was applied; add a new migration instead`,
      );
    }
    await tx.unsafe(migration.sql).simple();
    await tx`insert into schema_migrations (version, name, checksum) values (${migration.version}, ${migration.name}, ${migration.checksum})`;
    applied.push(migration.name);
  }
  return { applied };
}

/**
 * The transaction advisory lock that serialises everything that changes `schema`'s tables
 * wholesale: migrations, and a restore (which checks the schema is empty, then fills it).
 */
export async function lockSchema(tx: TransactionSql, schema: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(hashtextextended(${'switchboard.migrate:' + schema}, 0))`;
}

export async function readMigrations(): Promise<Migration[]> {
  const names = (await readdir(MIGRATIONS_DIR)).filter((name) => FILE_NAME.test(name)).sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(MIGRATIONS_DIR + name, 'utf8');
      return {
        version: Number(FILE_NAME.exec(name)![1]),
        name: name.replace(/\.sql$/, ''),
        sql,
        checksum: createHash('sha256').update(sql).digest('hex'),
      };
    }),
  );
}

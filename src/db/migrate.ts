import { createHash } from 'node:crypto';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Sql } from 'postgres';
import { PACKAGE_ROOT } from '../package-root.js';

const MIGRATIONS_DIR = join(PACKAGE_ROOT, 'migrations') + '/';
const FILE_NAME = /^(\d{4})_([a-z0-9_]+)\.sql$/;

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
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
  /** Tests of a migration: only the files numbered below this (the database before it). */
  options: { before?: number } = {},
): Promise<{ applied: string[] }> {
  const migrations = (await readMigrations()).filter(
    (migration) => options.before === undefined || migration.version < options.before,
  );
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtextextended(${'switchboard.migrate:' + schema}, 0))`;
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
  });
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

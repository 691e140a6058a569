import { createWriteStream, existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Sql, TransactionSql } from 'postgres';
import { VERSION } from '../package-root.js';
import {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  BackupError,
  type BackupHeader,
  type TableLine,
} from './backup-file.js';

export interface BackupSummary {
  header: BackupHeader;
  /** Every table's rows, in the order the backup holds them. */
  rows: Record<string, number>;
}

/**
 * Writes `schema` to `file` as one snapshot: a read-only repeatable-read transaction reads every
 * table (`COPY … TO STDOUT`, streamed through gzip to disk, never a whole table in memory) and the
 * migrations applied. The server may go on working meanwhile; what it commits after the snapshot
 * is not in the backup. Written under another name and renamed once complete (mode 0600: it
 * holds hashes of tokens, and sealed secrets), so `file` is a whole backup or none.
 */
export async function writeBackup(
  sql: Sql,
  schema: string,
  file: string,
  { secretKeyId }: { secretKeyId: string | null },
): Promise<BackupSummary> {
  assertNewBackupFile(file);
  const partial = `${file}.${process.pid}.partial`;
  try {
    const summary = await sql.begin('isolation level repeatable read read only', async (tx) => {
      const header = await readHeader(tx, schema, secretKeyId);
      const tables = await readTables(tx, schema);
      const rows: Record<string, number> = {};
      await pipeline(
        backupLines(tx, schema, header, tables, rows),
        createGzip(),
        createWriteStream(partial, { flags: 'wx', mode: 0o600 }),
      );
      return { header, rows };
    });
    await rename(partial, file);
    return summary;
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}

/** A backup never replaces a file: whatever is there may be the only copy of something. */
export function assertNewBackupFile(file: string): void {
  if (existsSync(file)) {
    throw new BackupError(
      `${file} exists: choose another name, or remove it first`,
      'backup_unreadable',
    );
  }
}

async function* backupLines(
  tx: TransactionSql,
  schema: string,
  header: BackupHeader,
  tables: TableLine[],
  rows: Record<string, number>,
): AsyncGenerator<string | Buffer> {
  yield `${JSON.stringify(header)}\n`;
  for (const table of tables) {
    yield `${JSON.stringify(table)}\n`;
    let count = 0;
    const copy = await tx`
      copy ${tx(`${schema}.${table.table}`)} (${tx(table.columns)}) to stdout`.readable();
    for await (const chunk of copy as AsyncIterable<Buffer>) {
      for (let at = chunk.indexOf(0x0a); at >= 0; at = chunk.indexOf(0x0a, at + 1)) count++;
      yield chunk;
    }
    rows[table.table] = count;
    yield '\\.\n';
  }
  yield `${JSON.stringify({ end: true, rows })}\n`;
}

async function readHeader(
  tx: TransactionSql,
  schema: string,
  secretKeyId: string | null,
): Promise<BackupHeader> {
  const [{ ready, postgres_version }] = await tx<[{ ready: boolean; postgres_version: string }]>`
    select to_regclass(${`${schema}.schema_migrations`}) is not null as ready,
           current_setting('server_version') as postgres_version`;
  if (!ready) {
    throw new BackupError(
      `the database holds no switchboard schema (${schema}) to back up — has 'switchboard up' run on it?`,
      'backup_unreadable',
    );
  }
  const migrations = await tx<BackupHeader['migrations']>`
    select version, name, checksum from ${tx(`${schema}.schema_migrations`)} order by version`;
  return {
    format: BACKUP_FORMAT,
    format_version: BACKUP_FORMAT_VERSION,
    switchboard_version: VERSION,
    created_at: new Date().toISOString(),
    postgres_version,
    schema,
    migrations: [...migrations],
    secret_key_id: secretKeyId,
  };
}

/**
 * The schema's tables (its own: not schema_migrations, which the header carries), each after
 * those its foreign keys reference, so that a restore loads them in this order with every
 * constraint checked. A table referencing itself is loaded in one COPY, checked at its end.
 */
export async function readTables(tx: TransactionSql, schema: string): Promise<TableLine[]> {
  const found = await tx<{ table: string; columns: string[]; references: string[] }[]>`
    select c.relname::text as table,
      array(select a.attname::text from pg_attribute a
            where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
            order by a.attnum) as columns,
      array(select distinct r.relname::text from pg_constraint k join pg_class r on r.oid = k.confrelid
            where k.conrelid = c.oid and k.contype = 'f' and k.confrelid <> c.oid
              and r.relnamespace = c.relnamespace) as references
    from pg_class c
    where c.relnamespace = ${schema}::regnamespace and c.relkind = 'r'
      and c.relname <> 'schema_migrations'
    order by c.relname`;
  // Only this schema's sequences are read: pg_sequences reads every sequence in the database,
  // and one another application drops meanwhile fails the whole statement.
  const sequences = await tx<{ table: string; column: string; last_value: number | null }[]>`
    with serial as materialized (
      select c.relname::text as table, a.attname::text as column,
        pg_get_serial_sequence(format('%I.%I', ${schema}::text, c.relname), a.attname) as sequence
      from pg_class c
      join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      where c.relnamespace = ${schema}::regnamespace and c.relkind = 'r'
    )
    select "table", "column", pg_sequence_last_value(sequence::regclass) as last_value
    from serial where sequence is not null`;
  const lines = found.map(({ table, columns }) => ({
    table,
    columns,
    sequences: sequences
      .filter((sequence) => sequence.table === table)
      .map(({ column, last_value }) => ({ column, last_value })),
  }));
  return inForeignKeyOrder(lines, new Map(found.map((t) => [t.table, t.references])));
}

/** Tables ordered so that each comes after every table it references (a topological sort). */
function inForeignKeyOrder(tables: TableLine[], references: Map<string, string[]>): TableLine[] {
  const ordered: TableLine[] = [];
  const placed = new Set<string>();
  let left = tables;
  while (left.length) {
    const ready = left.filter((t) =>
      (references.get(t.table) ?? []).every((other) => placed.has(other)),
    );
    if (!ready.length) {
      throw new Error(`foreign keys form a cycle among ${left.map((t) => t.table).join(', ')}`);
    }
    for (const table of ready) placed.add(table.table);
    ordered.push(...ready);
    left = left.filter((t) => !placed.has(t.table));
  }
  return ordered;
}

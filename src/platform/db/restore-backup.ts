import { pipeline } from 'node:stream/promises';
import postgres, { type Sql, type TransactionSql } from 'postgres';
import {
  BackupError,
  endLine,
  tableLine,
  type BackupHeader,
  type BackupReader,
  type OpenedBackup,
  type TableLine,
} from './backup-file.js';
import { lockSchema, migrateInTransaction, readMigrations } from './migrate.js';

export interface RestoreSummary {
  /** Every table's rows restored, in the order loaded. */
  rows: Record<string, number>;
  /** The migrations applied to bring the schema to the backup's. */
  applied: string[];
}

/**
 * Refuses a backup of a schema this switchboard cannot restore: one with a migration it does not
 * know (a newer switchboard's), or knows otherwise. Checked before the database is opened.
 */
export async function assertRestorable(header: BackupHeader): Promise<void> {
  const known = new Map((await readMigrations()).map((m) => [m.version, m]));
  for (const migration of header.migrations) {
    const ours = known.get(migration.version);
    if (ours?.name === migration.name && ours.checksum === migration.checksum) continue;
    throw new BackupError(
      `the backup is of a newer schema than this switchboard's (its migration ${migration.name} is not one of ours): restore it with switchboard ${header.switchboard_version} or later`,
      'backup_newer',
    );
  }
}

/**
 * Restores a backup into `schema`, all in one transaction, so that a refusal or a damaged file
 * changes nothing: the schema is brought to the backup's migrations (exactly those: `up` applies
 * this switchboard's later ones on its next start, to these rows as to any), every table is
 * loaded with `COPY … FROM STDIN` in the backup's order (foreign keys checked as they load), and
 * the sequences are set past every id. The last line's row counts and gzip's checksum are checked
 * before the commit.
 *
 * Switchboard's own triggers are off while the rows load (ALTER TABLE … DISABLE TRIGGER USER,
 * which the schema's owner may do, unlike session_replication_role, which takes a superuser —
 * none on a managed PostgreSQL): a restored todo is no new work to wake anyone for, and the
 * verdicts it holds were checked when they were recorded. Foreign keys are system triggers, and
 * stay on. The triggers are back on before the commit, and no one else sees them off: ALTER
 * TABLE holds its lock until then.
 */
export async function restoreBackup(
  sql: Sql,
  schema: string,
  backup: OpenedBackup,
): Promise<RestoreSummary> {
  await assertRestorable(backup.header);
  const versions = new Set(backup.header.migrations.map((m) => m.version));
  return sql.begin(async (tx) => {
    await lockSchema(tx, schema);
    await assertEmptyTarget(tx, schema, versions);
    const { applied } = await migrateInTransaction(tx, schema, { only: versions });
    // The rows the migrations made are the backup's too, as they were on the database backed up.
    const tables = await schemaTables(tx, schema);
    if (tables.length) await tx`truncate table ${tx(tables.map((table) => `${schema}.${table}`))}`;
    const triggered = await tablesWithOwnTriggers(tx, schema);
    for (const table of triggered) {
      await tx`alter table ${tx(`${schema}.${table}`)} disable trigger user`;
    }
    const rows = await loadTables(tx, schema, backup);
    for (const table of triggered) {
      await tx`alter table ${tx(`${schema}.${table}`)} enable trigger user`;
    }
    return { rows, applied };
  });
}

/**
 * Nothing of switchboard's may be there already: restored rows beside others would be neither
 * database, and a schema migrated past the backup's would hold its rows without the changes
 * those migrations make to the rows they find.
 */
async function assertEmptyTarget(
  tx: TransactionSql,
  schema: string,
  versions: ReadonlySet<number>,
): Promise<void> {
  const [{ migrated }] = await tx<[{ migrated: boolean }]>`
    select to_regclass(${`${schema}.schema_migrations`}) is not null as migrated`;
  if (!migrated) return;
  // Its people and its todos first: the table named is the one that tells whose data it is.
  const tables = await schemaTables(tx, schema);
  const first = ['principals', 'todos'].filter((table) => tables.includes(table));
  for (const table of [...first, ...tables.filter((table) => !first.includes(table))]) {
    const made = MADE_BY_MIGRATIONS[table];
    const [{ any }] = await tx<[{ any: boolean }]>`
      select exists (
        select from ${tx(`${schema}.${table}`)} where ${made ? tx.unsafe(`not (${made})`) : tx`true`}
      ) as any`;
    if (any) {
      throw new BackupError(
        `the database already holds switchboard data (schema ${schema}: table ${table} has rows): restore into a database without it`,
        'target_not_empty',
      );
    }
  }
  const beyond = await tx<{ name: string }[]>`
    select name from ${tx(`${schema}.schema_migrations`)}
    where version <> all(${[...versions]}::int[]) order by version limit 1`;
  if (beyond.length) {
    throw new BackupError(
      `schema ${schema} of the database has migration ${beyond[0]!.name}, which the backup's schema has not: restore into a database without switchboard's schema`,
      'target_not_empty',
    );
  }
}

/** Rows that migrations insert, which every migrated schema holds: not a server's data. */
const MADE_BY_MIGRATIONS: Record<string, string> = { oauth_clients: `source = 'builtin'` };

/** The schema's tables but schema_migrations (the header's), by name. */
async function schemaTables(tx: TransactionSql, schema: string): Promise<string[]> {
  const rows = await tx<{ table: string }[]>`
    select relname::text as table from pg_class
    where relnamespace = ${schema}::regnamespace and relkind = 'r' and relname <> 'schema_migrations'
    order by relname`;
  return rows.map((row) => row.table);
}

/** The schema's tables with triggers of switchboard's own (not the foreign keys' system ones). */
async function tablesWithOwnTriggers(tx: TransactionSql, schema: string): Promise<string[]> {
  const rows = await tx<{ table: string }[]>`
    select distinct c.relname::text as table from pg_trigger t join pg_class c on c.oid = t.tgrelid
    where c.relnamespace = ${schema}::regnamespace and not t.tgisinternal
    order by 1`;
  return rows.map((row) => row.table);
}

/** Every table section of the backup, loaded in its order, up to and checked against its end. */
async function loadTables(
  tx: TransactionSql,
  schema: string,
  { file, reader }: OpenedBackup,
): Promise<Record<string, number>> {
  const damaged = (why: string) =>
    new BackupError(`${file} is damaged: ${why}`, 'backup_unreadable');
  const tables = new Set(await schemaTables(tx, schema));
  const rows: Record<string, number> = {};
  for (;;) {
    const json = parseLine(await reader.line(), damaged);
    const end = endLine.safeParse(json);
    if (end.success) {
      const counted = Object.entries(end.data.rows);
      if (
        counted.length !== Object.keys(rows).length ||
        counted.some(([table, count]) => rows[table] !== count)
      ) {
        throw damaged('its tables do not hold the rows its last line counts');
      }
      if (!(await reader.atEnd())) throw damaged('more follows its last line');
      return rows;
    }
    const table = tableLine.safeParse(json);
    if (!table.success) throw damaged('a line is neither a table nor the end');
    const { data } = table;
    if (!tables.has(data.table) || data.table in rows) {
      throw damaged(`table ${data.table} is not one of schema ${schema}'s, or comes twice`);
    }
    rows[data.table] = await loadTable(tx, schema, data, reader, damaged);
  }
}

function parseLine(line: string | undefined, damaged: (why: string) => BackupError): unknown {
  if (line === undefined) throw damaged('it ends before its last line');
  try {
    return JSON.parse(line);
  } catch {
    throw damaged('a line that should name a table is not JSON');
  }
}

/** One table's rows, streamed into `COPY … FROM STDIN`; then its sequences, past every id. */
async function loadTable(
  tx: TransactionSql,
  schema: string,
  table: TableLine,
  reader: BackupReader,
  damaged: (why: string) => BackupError,
): Promise<number> {
  const name = `${schema}.${table.table}`;
  const count = { rows: 0 };
  try {
    const copy = await tx`copy ${tx(name)} (${tx(table.columns)}) from stdin`.writable();
    await pipeline(reader.rows(count), copy);
  } catch (error) {
    // Rows PostgreSQL cannot read (22…), that break a constraint (23…) or name a column the
    // table lacks (42703) are the file's fault.
    if (error instanceof postgres.PostgresError && /^(22|23|42703)/.test(error.code)) {
      throw damaged(`table ${table.table}: ${error.message}`);
    }
    throw error;
  }
  for (const { column, last_value } of table.sequences) {
    await tx`
      select setval(pg_get_serial_sequence(${name}, ${column}), next)
      from (select greatest(${last_value}::bigint, max(${tx(column)})) as next from ${tx(name)}) as ids
      where next is not null`;
  }
  return count.rows;
}

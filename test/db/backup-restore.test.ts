import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import type postgres from 'postgres';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { BackupError, openBackupFile } from '../../src/platform/db/backup-file.js';
import { migrate, readMigrations } from '../../src/platform/db/migrate.js';
import { connect } from '../../src/platform/db/open-database.js';
import { restoreBackup } from '../../src/platform/db/restore-backup.js';
import { writeBackup } from '../../src/platform/db/write-backup.js';
import {
  authenticateToken,
  createTodo,
  getTodoWithHistory,
  wakeChannel,
} from '../../src/data/index.js';
import { silentLogger } from '../../src/platform/logger.js';
import { readGitHubApp } from '../../src/integrations/github-app/github-app-store.js';
import { createSecretBox } from '../../src/platform/secrets/secret-box.js';
import { openSource } from '../../src/data/sources/source-store.js';
import { createOwnedDatabase, type OwnedDatabase } from '../support/owned-database.js';
import { createCast, type Cast } from '../support/principals.js';
import { fillSampleLedger, tableContents, type SampleLedger } from '../support/sample-ledger.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let source: TestDatabase;
let cast: Cast;
let dir: string;
/** A database of its own, owned by a role that is no superuser, as on a managed PostgreSQL. */
let owned: OwnedDatabase;
const pools: postgres.Sql[] = [];
const box = createSecretBox(randomBytes(32));
let made: SampleLedger;

beforeAll(async () => {
  source = await createTestDatabase();
  cast = await createCast(source.sql);
  dir = await mkdtemp(join(tmpdir(), 'switchboard-backup-'));
  owned = await createOwnedDatabase();
  made = await fillSampleLedger(source.sql, cast, box);
});
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end({ timeout: 5 })));
  await source?.drop();
  await owned?.drop();
  await rm(dir, { recursive: true, force: true });
});

/** A pool on `schema` of the database at `url` (default: the run's), ended with the file. */
function pool(schema: string, url?: string): postgres.Sql {
  const sql = connect(url ?? source.url, { schema, max: 2, log: silentLogger });
  pools.push(sql);
  return sql;
}

const fresh = (prefix: string) => `${prefix}_${randomBytes(6).toString('hex')}`;

async function backUp(sql = source.sql, schema = source.schema): Promise<string> {
  const file = join(dir, `${fresh('backup')}.gz`);
  await writeBackup(sql, schema, file, { secretKeyId: null });
  return file;
}

async function restore(file: string, sql: postgres.Sql, schema: string) {
  const backup = await openBackupFile(file);
  try {
    return await restoreBackup(sql, schema, backup);
  } finally {
    backup.close();
  }
}

async function sequences(sql: postgres.Sql, schema: string) {
  return sql`
    select sequencename, last_value from pg_sequences where schemaname = ${schema} order by 1`;
}

test(
  'a backup restored by a schema owner who is no superuser holds every row, sealed secrets that open with the same key, and fires no wake',
  { timeout: 60_000 },
  async () => {
    const file = await backUp();
    const target = pool('switchboard', owned.url);
    const [{ superuser }] = await target<[{ superuser: string }]>`
      select current_setting('is_superuser') as superuser`;
    expect(superuser).toBe('off');
    const heard: string[] = [];
    const listener = pool('switchboard', owned.url);
    await listener.listen(wakeChannel('switchboard'), (payload) => heard.push(payload));

    const { rows, applied } = await restore(file, target, 'switchboard');
    expect(applied).toEqual((await readMigrations()).map((m) => m.name));
    expect(rows).toMatchObject({ principals: 4, todos: 3, sources: 1, github_app: 1 });
    expect(rows.todo_events).toBeGreaterThanOrEqual(5);

    expect(await tableContents(target, 'switchboard')).toEqual(
      await tableContents(source.sql, source.schema),
    );
    expect(await sequences(target, 'switchboard')).toEqual(
      await sequences(source.sql, source.schema),
    );
    const [history, restored] = await Promise.all([
      getTodoWithHistory(source.sql, cast.bob, made.done),
      getTodoWithHistory(target, cast.bob, made.done),
    ]);
    expect(restored).toEqual(history);
    expect(restored.history.map((e) => e.action)).toEqual(['created', 'claimed', 'completed']);
    expect(await authenticateToken(target, made.token)).toMatchObject({ name: 'ada' });
    expect((await openSource(target, box, 'forge'))?.secrets).toEqual([made.sourceSecret]);
    expect(await readGitHubApp(target, box)).toEqual(await readGitHubApp(source.sql, box));

    // No wake for the restored pending todo: PostgreSQL delivers notifications in commit order,
    // so once one sent after the restore arrives, any the restore sent would have come first.
    // The triggers are on again: a todo created now wakes, with the next id after the backup's.
    const { todo: next } = await createTodo(target, cast.bob, {
      queue: 'reviews',
      title: 'after the restore',
      source: 'cli',
    });
    await expect.poll(() => heard.length, { timeout: 5_000 }).toBeGreaterThan(0);
    expect(heard.map((payload) => JSON.parse(payload).todo_id)).toEqual([next.id]);
    expect(next.id).toBe(made.approval + 1);
  },
);

test('a restore into a database that holds switchboard data is refused in one line, and changes nothing', async () => {
  const schema = fresh('r');
  const target = pool(schema);
  await migrate(target, schema);
  await target`insert into principals (kind, name) values ('human', 'someone')`;
  const before = await tableContents(target, schema);
  const file = await backUp();
  const refusal = await restore(file, target, schema).catch((error: unknown) => error);
  expect(refusal).toBeInstanceOf(BackupError);
  expect(refusal).toMatchObject({
    code: 'target_not_empty',
    message: `the database already holds switchboard data (schema ${schema}: table principals has rows): restore into a database without it`,
  });
  expect(await tableContents(target, schema)).toEqual(before);
});

test('a database migrated ahead of the restore (switchboard migrate), still empty, takes it', async () => {
  const schema = fresh('r');
  const target = pool(schema);
  await migrate(target, schema);
  const { applied } = await restore(await backUp(), target, schema);
  expect(applied).toEqual([]);
  expect(await tableContents(target, schema)).toEqual(
    await tableContents(source.sql, source.schema),
  );
});

test('a backup of an older schema is restored at its own version; migrate then brings it up to date', async () => {
  const migrations = await readMigrations();
  const last = migrations.at(-1)!;
  const olderSchema = fresh('o');
  const older = pool(olderSchema);
  await migrate(older, olderSchema, { before: last.version });
  await older`insert into principals (kind, name, is_admin) values ('human', 'ada', true)`;
  const file = await backUp(older, olderSchema);

  const schema = fresh('r');
  const target = pool(schema);
  const { applied } = await restore(file, target, schema);
  expect(applied).toEqual(migrations.slice(0, -1).map((m) => m.name));
  expect(await migrate(target, schema)).toEqual({ applied: [last.name] });
  expect(await target`select name from principals`).toEqual([{ name: 'ada' }]);

  // The other way round: an empty schema already past the backup's is refused, not loaded into.
  const ahead = fresh('r');
  await migrate(pool(ahead), ahead);
  await expect(restore(file, pool(ahead), ahead)).rejects.toMatchObject({
    code: 'target_not_empty',
    message: `schema ${ahead} of the database has migration ${last.name}, which the backup's schema has not: restore into a database without switchboard's schema`,
  });
});

/** The backup as text, changed by `edit`, gzipped again. */
async function edited(file: string, edit: (text: string) => string): Promise<string> {
  const copy = join(dir, `${fresh('edited')}.gz`);
  await writeFile(copy, gzipSync(edit(gunzipSync(await readFile(file)).toString('utf8'))));
  return copy;
}

async function schemaExists(schema: string): Promise<boolean> {
  const [{ exists }] = await source.sql<[{ exists: boolean }]>`
    select to_regnamespace(${schema}) is not null as exists`;
  return exists;
}

test('a backup of a newer schema is refused before anything is made', async () => {
  const file = await edited(await backUp(), (text) =>
    text.replace(
      /"migrations":\[/,
      '"migrations":[{"version":9999,"name":"9999_from_the_future","checksum":"x"},',
    ),
  );
  const schema = fresh('r');
  await expect(restore(file, pool(schema), schema)).rejects.toMatchObject({
    code: 'backup_newer',
    message: expect.stringMatching(
      /^the backup is of a newer schema than this switchboard's \(its migration 9999_from_the_future is not one of ours\)/,
    ),
  });
  expect(await schemaExists(schema)).toBe(false);
});

test('a damaged or truncated backup is refused, and the restore leaves nothing behind', async () => {
  const file = await backUp();
  const whole = await readFile(file);
  const truncated = join(dir, 'truncated.gz');
  await writeFile(truncated, whole.subarray(0, Math.floor(whole.length * 0.8)));
  const miscounted = await edited(file, (text) => text.replace(/("end":true.*"todos":)3\b/, '$12'));
  const badRow = await edited(file, (text) =>
    text.replace(/\tStill waiting\t/, '\tStill waiting\tx\t'),
  );
  for (const [damaged, why] of [
    [truncated, /unexpected end of file|ends inside/],
    [miscounted, /its tables do not hold the rows its last line counts/],
    [badRow, /^\S+ is damaged: table todos: extra data after last expected column/],
  ] as const) {
    const schema = fresh('r');
    await expect(restore(damaged, pool(schema), schema), damaged).rejects.toMatchObject({
      code: 'backup_unreadable',
      message: expect.stringMatching(why),
    });
    expect(await schemaExists(schema)).toBe(false);
  }
  const notABackup = join(dir, 'not-a-backup.gz');
  await writeFile(notABackup, gzipSync('{"hello":"world"}\n'));
  await expect(openBackupFile(notABackup)).rejects.toMatchObject({
    code: 'backup_unreadable',
    message: `${notABackup} is damaged or not a switchboard backup: its first line is not a switchboard backup header`,
  });
  await expect(openBackupFile(join(dir, 'none.gz'))).rejects.toMatchObject({
    code: 'backup_unreadable',
    message: expect.stringMatching(/^cannot read .*none\.gz: ENOENT/),
  });
});

test('a backup taken while the server writes is one snapshot: a todo committed during it is wholly out', async () => {
  // The backup copies todos, then waits at a table it copies before todo_events, which another
  // session holds; that session then commits a todo and its history. Read at the time of each
  // table (not one snapshot), the backup would hold the history of a todo it does not hold, and
  // its restore would fail.
  const order = [
    ...gunzipSync(await readFile(await backUp()))
      .toString('utf8')
      .matchAll(/^\{"table":"(\w+)"/gm),
  ].map((match) => match[1]!);
  const between = order[order.indexOf('todo_events') - 1]!;
  expect(order.indexOf(between)).toBeGreaterThan(order.indexOf('todos'));
  const writer = await source.connect(1).reserve();
  await writer`begin`;
  await writer`lock table ${writer(between)} in access exclusive mode`;
  const file = join(dir, `${fresh('during')}.gz`);
  const backup = writeBackup(source.sql, source.schema, file, { secretKeyId: null });
  for (let waited = 0; ; waited += 50) {
    const [{ waiting }] = await source.sql<[{ waiting: boolean }]>`
      select exists (select from pg_locks l join pg_class c on c.oid = l.relation
                     where c.relname = ${between} and c.relnamespace = ${source.schema}::regnamespace
                       and not l.granted) as waiting`;
    if (waiting) break;
    if (waited > 20_000) throw new Error(`the backup never reached ${between}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const { todo: during } = await createTodo(writer, cast.bob, {
    queue: 'reviews',
    title: 'committed during the backup',
    source: 'cli',
  });
  await writer`commit`;
  writer.release();
  const { rows } = await backup;
  const schema = fresh('r');
  const target = pool(schema);
  await restore(file, target, schema);
  expect(await target`select id from todos where id = ${during.id}`).toEqual([]);
  const [{ before }] = await source.sql<[{ before: number }]>`
    select count(*)::int as before from todos where id < ${during.id}`;
  expect(rows.todos).toBe(before);
});

test('tables of many megabytes stream through, row for row', { timeout: 120_000 }, async () => {
  const big = fresh('big');
  const sql = pool(big);
  await migrate(sql, big);
  await sql`insert into principals (kind, name, is_admin) values ('human', 'ada', true)`;
  // 40,000 todos with a history each, bodies of 300 characters ending in a backslash, a tab, a
  // newline and a dot (COPY escapes the first three): some 15 MB of COPY text.
  await sql`
      insert into todos (queue, kind, title, body, state, source, attributed_to, available_at)
      select 'bulk', 'manual', 'todo ' || n,
             repeat(md5(n::text), 9) || chr(92) || chr(9) || chr(10) || '.',
             'pending', 'cli', 'ada', now()
      from generate_series(1, 40000) as n`;
  await sql`
      insert into todo_events (todo_id, actor_kind, actor, via, action)
      select id, 'human', 'ada', 'cli', 'created' from todos`;
  const file = await backUp(sql, big);
  const target = fresh('r');
  const restored = pool(target);
  const { rows } = await restore(file, restored, target);
  expect(rows).toMatchObject({ todos: 40_000, todo_events: 40_000 });
  const digest = (db: postgres.Sql) => db`
      select md5(string_agg(t::text, '' order by t.id)) as todos,
             (select md5(string_agg(e::text, '' order by e.id)) from todo_events e) as events
      from todos t`;
  expect(await digest(restored)).toEqual(await digest(sql));
});

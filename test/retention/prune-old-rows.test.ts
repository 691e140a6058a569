import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadServerConfig } from '../../src/platform/config/server-config.js';
import { withAdvisoryLock } from '../../src/platform/db/with-advisory-lock.js';
import {
  cancelTodo,
  claimTodo,
  completeTodo,
  createTodo,
  decideApproval,
  failTodo,
  replyToTodo,
  requestApproval,
} from '../../src/data/index.js';
import { silentLogger } from '../../src/platform/logger.js';
import { createPruner } from '../../src/jobs/create-pruner.js';
import { pruneOldRows } from '../../src/data/retention/prune-old-rows.js';
import { createSecretBox } from '../../src/platform/secrets/secret-box.js';
import { startServer } from '../../src/server/start-server.js';
import { FAKE } from '../support/fake-credentials.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

// Retention against a real PostgreSQL: rows are made through the ledger and the intake's own
// tables, then aged by moving their timestamps back, as if that many days had passed.

let db: TestDatabase;
let cast: Cast;
beforeAll(async () => {
  db = await createTestDatabase();
  cast = await createCast(db.sql);
});
afterAll(() => db?.drop());

const DAYS = 30;

/** Moves a todo, its history and everything recorded about it `days` into the past. */
async function age(todoId: number, days: number) {
  const back = db.sql`make_interval(days => ${days})`;
  await db.sql`update todos set created_at = created_at - ${back}, updated_at = updated_at - ${back} where id = ${todoId}`;
  await db.sql`update todo_events set at = at - ${back} where todo_id = ${todoId}`;
}

const pending = async (title: string) =>
  (await createTodo(db.sql, cast.bob, { queue: 'reviews', title, source: 'cli' })).todo.id;

async function done(title: string) {
  const id = await pending(title);
  const claimed = await claimTodo(db.sql, cast.bot, id);
  await replyToTodo(db.sql, cast.bot, id, 'working on it');
  await completeTodo(db.sql, cast.bot, id, claimed.lease_token, { summary: 'did it' });
  return id;
}

async function failed(title: string, maxAttempts: number) {
  const { todo } = await createTodo(db.sql, cast.bob, {
    queue: 'reviews',
    title,
    source: 'cli',
    max_attempts: maxAttempts,
  });
  const claimed = await claimTodo(db.sql, cast.bot, todo.id);
  await failTodo(db.sql, cast.bot, todo.id, claimed.lease_token, 'broke');
  return todo.id;
}

async function canceled(title: string) {
  const id = await pending(title);
  await cancelTodo(db.sql, cast.bob, id, 'not needed');
  return id;
}

const daysAgo = (days: number) => db.sql`now() - make_interval(days => ${days})`;

async function githubDelivery(days: number, todoId: number | null = null) {
  const [row] = await db.sql<[{ id: number }]>`
    insert into deliveries (source, kind, delivery_id, event, action, disposition, todo_id, facts,
                            body_sha256, received_at)
    values ('github', 'github', ${randomUUID()}, 'issues', 'labeled', ${todoId ? 'created' : 'no_rule'}, ${todoId},
            '{}', ${randomBytes(32)}, ${daysAgo(days)})
    returning id`;
  return Number(row.id);
}

async function sourceDelivery(days: number) {
  const [row] = await db.sql<[{ id: number }]>`
    insert into deliveries (source, kind, delivery_id, event, disposition, facts,
                            body_sha256, received_at)
    values ('crm', 'standard-webhooks', ${randomUUID()}, 'contact.created', 'no_rule', '{}',
            ${randomBytes(32)}, ${daysAgo(days)})
    returning id`;
  return Number(row.id);
}

async function githubWriteBack(todoId: number, state: 'pending' | 'sent' | 'dead', days: number) {
  const [row] = await db.sql<[{ id: number }]>`
    insert into outbox (todo_id, source, kind, write_back, target, body, state, sent_at, created_at)
    values (${todoId}, 'github', 'github', 'comment',
            '{"installation_id": 1, "owner": "acme", "repo": "api", "issue_number": 7}', 'Done.', ${state},
            ${state === 'sent' ? daysAgo(days) : null}, ${daysAgo(days)})
    returning id`;
  return Number(row.id);
}

async function sourceWriteBack(todoId: number, state: 'pending' | 'sent' | 'dead', days: number) {
  const [row] = await db.sql<[{ id: number }]>`
    insert into outbox (todo_id, source, kind, write_back, target, body, state, sent_at, created_at)
    values (${todoId}, 'crm', 'standard-webhooks', 'comment', '{"issue": 7}', 'Done.', ${state},
            ${state === 'sent' ? daysAgo(days) : null}, ${daysAgo(days)})
    returning id`;
  return Number(row.id);
}

async function redelivery(days: number) {
  const guid = randomUUID();
  await db.sql`
    insert into github_redeliveries (guid, event, attempt_id, status_code, requested_at, accepted)
    values (${guid}, 'issues', 1, 0, ${daysAgo(days)}, true)`;
  return guid;
}

const exists = async (table: string, id: number | string) => {
  const key = table === 'github_redeliveries' ? 'guid' : 'id';
  const rows = await db.sql`select 1 from ${db.sql(table)} where ${db.sql(key)} = ${id}`;
  return rows.length === 1;
};
const historyOf = async (todoId: number) =>
  (
    await db.sql<{ action: string }[]>`
      select action from todo_events where todo_id = ${todoId} order by at, id`
  ).map((event) => event.action);

describe.sequential('a pass', () => {
  test('old rows go, new ones stay; finished todos keep their row and last event, live ones their history', async () => {
    const old = {
      done: await done('done long ago'),
      canceled: await canceled('canceled long ago'),
      dead: await failed('failed for good long ago', 1),
      retrying: await failed('failed, retrying', 5),
      pending: await pending('waiting for a month'),
    };
    const quarantined = (
      await createTodo(db.sql, cast.github, {
        queue: 'reviews',
        title: 'from a stranger',
        source: 'github',
        attributed_to: 'mallory',
        quarantined: true,
      })
    ).todo.id;
    for (const id of [...Object.values(old), quarantined]) await age(id, DAYS + 10);
    const recent = await done('done today');
    const fullHistory = {
      done: await historyOf(old.done),
      retrying: await historyOf(old.retrying),
      pending: await historyOf(old.pending),
      quarantined: await historyOf(quarantined),
      recent: await historyOf(recent),
    };
    expect(fullHistory.done).toEqual(['created', 'claimed', 'replied', 'completed']);

    const rows = {
      gone: {
        deliveries: [
          await githubDelivery(DAYS + 1, old.done),
          // The todo it made is still open: the delivery's record goes, the todo stays.
          await githubDelivery(DAYS + 1, old.pending),
          await githubDelivery(DAYS + 5),
          await sourceDelivery(DAYS + 1),
          await sourceDelivery(DAYS + 90),
        ],
        outbox: [
          await githubWriteBack(old.done, 'sent', DAYS + 1),
          await githubWriteBack(old.dead, 'dead', DAYS + 1),
          await sourceWriteBack(old.done, 'sent', DAYS + 1),
          await sourceWriteBack(old.canceled, 'dead', DAYS + 2),
        ],
        github_redeliveries: [await redelivery(DAYS + 1)],
      },
      kept: {
        deliveries: [
          await githubDelivery(DAYS - 1, recent),
          await githubDelivery(0),
          await sourceDelivery(DAYS - 1),
        ],
        // A write-back still owed is never pruned, however old.
        outbox: [
          await githubWriteBack(old.pending, 'pending', DAYS + 10),
          await githubWriteBack(recent, 'sent', 1),
          await sourceWriteBack(old.pending, 'pending', DAYS + 10),
          await sourceWriteBack(recent, 'dead', DAYS - 1),
        ],
        github_redeliveries: [await redelivery(2)],
      },
    };

    // Batches of 2 rows (and 1 todo): every table takes several statements.
    const cursor = { history: null };
    const pruned = await pruneOldRows(db.sql, { retentionDays: DAYS, batchSize: 2, cursor });
    expect(pruned).toEqual({
      deliveries: 5,
      outbox: 4,
      github_redeliveries: 1,
      // done: created, claimed, replied; canceled: created; dead: created, claimed.
      todo_events: 6,
      todo_secrets: 0,
      slack_messages: 0,
      auth_failures: 0,
    });
    for (const [table, ids] of Object.entries(rows.gone))
      for (const id of ids) expect(await exists(table, id), `${table} ${id}`).toBe(false);
    for (const [table, ids] of Object.entries(rows.kept))
      for (const id of ids) expect(await exists(table, id), `${table} ${id}`).toBe(true);

    // The todos themselves stay, with who finished them and how.
    for (const id of [...Object.values(old), quarantined, recent])
      expect(await exists('todos', id)).toBe(true);
    expect(await historyOf(old.done)).toEqual(['completed']);
    expect(await historyOf(old.canceled)).toEqual(['canceled']);
    expect(await historyOf(old.dead)).toEqual(['failed']);
    // Still open, or finished within the period: every event stays.
    expect(await historyOf(old.retrying)).toEqual(fullHistory.retrying);
    expect(await historyOf(old.pending)).toEqual(fullHistory.pending);
    expect(await historyOf(quarantined)).toEqual(fullHistory.quarantined);
    expect(await historyOf(recent)).toEqual(fullHistory.recent);

    // Again: nothing left to do, whether the walk starts where it stopped or from the start.
    const nothing = {
      deliveries: 0,
      outbox: 0,
      github_redeliveries: 0,
      todo_events: 0,
      todo_secrets: 0,
      slack_messages: 0,
      auth_failures: 0,
    };
    expect(cursor.history).not.toBeNull();
    expect(await pruneOldRows(db.sql, { retentionDays: DAYS, batchSize: 2, cursor })).toEqual(
      nothing,
    );
    expect(await pruneOldRows(db.sql, { retentionDays: DAYS, batchSize: 2 })).toEqual(nothing);
  });

  test('the credentials withheld from a todo go once it finished that long ago; an open or recent todo keeps them', async () => {
    const box = createSecretBox(randomBytes(32));
    const seal = (value: string) => box.seal(value);
    const withSecret = async (title: string) =>
      (
        await createTodo(
          db.sql,
          cast.bob,
          { queue: 'reviews', title: `${title} ${FAKE.githubClassic()}`, source: 'cli' },
          { seal },
        )
      ).todo.id;
    const finishedLongAgo = await withSecret('finished long ago');
    await cancelTodo(db.sql, cast.bob, finishedLongAgo);
    await age(finishedLongAgo, DAYS + 1);
    const openLong = await withSecret('open for long');
    await age(openLong, DAYS + 1);
    const finishedToday = await withSecret('finished today');
    await cancelTodo(db.sql, cast.bob, finishedToday);
    const secretsOf = async (todoId: number) =>
      (await db.sql`select id from todo_secrets where todo_id = ${todoId}`).length;
    expect(await secretsOf(finishedLongAgo)).toBe(1);

    const pruned = await pruneOldRows(db.sql, { retentionDays: DAYS, batchSize: 2 });
    expect(pruned.todo_secrets).toBe(1);
    expect(await secretsOf(finishedLongAgo)).toBe(0);
    expect(await secretsOf(openLong)).toBe(1);
    expect(await secretsOf(finishedToday)).toBe(1);
  });

  test('regression: an approval’s Slack message was kept forever; it goes with its approval’s history, unless an update of it is still owed', async () => {
    const approval = async (question: string) =>
      (await requestApproval(db.sql, cast.bot, { question, source: 'mcp' })).id;
    /** The message it was posted as, and the outbox row that posted it or closed it. */
    const message = async (todoId: number, update: 'sent' | 'pending' | null) => {
      await db.sql`
        insert into slack_messages (todo_id, slack_user_id, channel_id, ts, posted_at, closed_at)
        values (${todoId}, 'U0BOB0001', 'D0BOB0001', '1700000001.000100', now(),
                ${update ? db.sql`now()` : null})`;
      if (update)
        await db.sql`
          insert into outbox (todo_id, source, kind, write_back, target, body, state, sent_at)
          values (${todoId}, 'slack', 'slack', 'message_update', ${db.sql.json({ todo_id: todoId })},
                  'ended', ${update}, ${update === 'sent' ? db.sql`now()` : null})`;
    };
    const decided = await approval('Merge it, long ago?');
    await decideApproval(db.sql, cast.bob, decided, 'allow');
    await message(decided, 'sent');
    const expired = await approval('Deploy, long ago?');
    await cancelTodo(db.sql, cast.bob, expired, 'expired without a verdict');
    await message(expired, 'sent');
    // Its closing update has not reached Slack yet: the message's row is what it updates.
    const owed = await approval('Owed an update?');
    await cancelTodo(db.sql, cast.bob, owed, 'canceled');
    await message(owed, 'pending');
    const waiting = await approval('Still waiting, asked long ago?');
    await message(waiting, null);
    const recent = await approval('Decided today?');
    await decideApproval(db.sql, cast.bob, recent, 'deny');
    await message(recent, 'sent');
    for (const id of [decided, expired, owed, waiting]) await age(id, DAYS + 3);

    const pruned = await pruneOldRows(db.sql, { retentionDays: DAYS, batchSize: 1 });
    expect(pruned.slack_messages).toBe(2);
    const left = await db.sql<{ todo_id: string }[]>`
      select todo_id from slack_messages where todo_id = any(${[decided, expired, owed, waiting, recent]})
      order by todo_id`;
    expect(left.map((row) => Number(row.todo_id))).toEqual([owed, waiting, recent]);
    // The approvals themselves stay, with their verdicts.
    expect(await exists('todos', decided)).toBe(true);
    expect((await pruneOldRows(db.sql, { retentionDays: DAYS })).slack_messages).toBe(0);
  });

  test('a todo that finishes after it had been waiting long has its history pruned once it is old', async () => {
    const id = await pending('waited, then done');
    await age(id, DAYS + 10);
    const claimed = await claimTodo(db.sql, cast.bot, id);
    await completeTodo(db.sql, cast.bot, id, claimed.lease_token, {});
    const cursor = { history: null };
    // Finished just now: kept.
    await pruneOldRows(db.sql, { retentionDays: DAYS, cursor });
    expect(await historyOf(id)).toEqual(['created', 'claimed', 'completed']);
    // Finished more than the period ago: pruned, even though the cursor has passed older ones.
    await db.sql`update todos set updated_at = now() - make_interval(days => ${DAYS + 1}) where id = ${id}`;
    expect((await pruneOldRows(db.sql, { retentionDays: DAYS, cursor })).todo_events).toBe(2);
    expect(await historyOf(id)).toEqual(['completed']);
  });

  test('regression: the walk over finished todos took its own cursor again when a timestamp had microseconds', async () => {
    // A JavaScript Date keeps milliseconds: a cursor sent back through one landed before its own
    // todo, which the next batch took again, for ever. Three todos, one a batch, each finished at
    // a time with microseconds; a pass that loops is stopped after a while, its work undone.
    const ids = [await done('first'), await done('second'), await done('third')];
    for (const [n, id] of ids.entries())
      await db.sql`
        update todos set updated_at = date_trunc('second', now())
                                      - make_interval(days => ${DAYS}, secs => 60 + ${n} + 0.123456)
        where id = ${id}`;
    const cursor: { history: { at: string; id: number } | null } = { history: null };
    await pruneOldRows(db.sql, {
      retentionDays: DAYS,
      batchSize: 2,
      cursor,
      signal: AbortSignal.timeout(10_000),
    });
    for (const id of ids) expect(await historyOf(id)).toEqual(['completed']);
    // The walk's last todo is the one finished latest of those past the cutoff: this test's first
    // (a minute past it, later than the other tests' todos), finished at :.876544.
    const [last] = await db.sql<[{ at: string; id: number }]>`
      select updated_at::text as at, id from todos
      where (state in ('done', 'canceled') or (state = 'failed' and available_at is null))
        and updated_at < now() - make_interval(days => ${DAYS})
      order by updated_at desc, id desc limit 1`;
    expect(cursor.history).toEqual({ at: last.at, id: Number(last.id) });
    expect(last.at).toMatch(/\.876544\+/);
  });

  test('rows a writer holds are skipped, not waited for; the next pass takes them', async () => {
    const held = await githubDelivery(DAYS + 1);
    const free = await githubDelivery(DAYS + 1);
    const heldWriteBack = await githubWriteBack(await done('held write-back'), 'sent', DAYS + 1);
    const writer = db.connect(1);
    let release!: () => void;
    const releasing = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    const holding = writer.begin(async (tx) => {
      await tx`select 1 from deliveries where id = ${held} for update`;
      await tx`select 1 from outbox where id = ${heldWriteBack} for update`;
      locked();
      // Held until the pass below has finished: a pass that waited for it would never finish.
      await releasing;
    });
    await lockTaken;
    try {
      const pruned = await pruneOldRows(db.sql, { retentionDays: DAYS });
      expect(pruned.deliveries).toBe(1);
      expect(await exists('deliveries', free)).toBe(false);
      expect(await exists('deliveries', held)).toBe(true);
      expect(await exists('outbox', heldWriteBack)).toBe(true);
    } finally {
      release();
      await holding;
      await writer.end();
    }
    const next = await pruneOldRows(db.sql, { retentionDays: DAYS });
    expect(next).toMatchObject({ deliveries: 1, outbox: 1 });
    expect(await exists('deliveries', held)).toBe(false);
  });

  test('a writer keeps writing while a large pass runs: neither waits for the other', async () => {
    const N = 6000;
    await db.sql`
      insert into deliveries (source, kind, delivery_id, event, disposition, facts, body_sha256,
                              received_at)
      select 'github', 'github', 'bulk-' || n, 'push', 'no_rule', '{}', sha256(n::text::bytea),
             now() - make_interval(days => ${DAYS + 1})
      from generate_series(1, ${N}) n`;
    const writer = db.connect(2);
    const commits: number[] = [];
    let stop = false;
    const writing = (async () => {
      while (!stop) {
        // What the intake writes: a new delivery row, and a todo with its first event.
        await writer`
          insert into deliveries (source, kind, delivery_id, event, disposition, facts, body_sha256)
          values ('github', 'github', ${randomUUID()}, 'issues', 'no_rule', '{}', ${randomBytes(32)})`;
        await createTodo(writer, cast.bob, { queue: 'reviews', title: 'meanwhile', source: 'cli' });
        commits.push(performance.now());
      }
    })();
    try {
      // Wait for the writer to be under way.
      while (commits.length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
      const started = performance.now();
      const pruned = await pruneOldRows(db.sql, { retentionDays: DAYS, batchSize: 500 });
      const ended = performance.now();
      expect(pruned.deliveries).toBe(N);
      // The writer committed while the pass ran (between its batches), not only after it.
      expect(commits.filter((at) => at > started && at < ended).length).toBeGreaterThan(0);
    } finally {
      stop = true;
      await writing;
      await writer.end();
    }
    const [{ left }] = await db.sql<[{ left: number }]>`
      select count(*)::int as left from deliveries where delivery_id like 'bulk-%'`;
    expect(left).toBe(0);
  });
});

describe('in the background', () => {
  test('one process prunes at a time: a pass finds the lock taken and skips its turn', async () => {
    const old = await githubDelivery(DAYS + 1);
    const other = db.connect(2);
    try {
      const pruner = createPruner({
        sql: db.sql,
        direct: db.sql,
        log: silentLogger,
        retentionDays: DAYS,
      });
      const skipped = await withAdvisoryLock(other, 'switchboard.retention', () =>
        pruner.runOnce(),
      );
      expect(skipped).toEqual({ locked: true, value: null });
      expect(await exists('deliveries', old)).toBe(true);
      expect((await pruner.runOnce())?.deliveries).toBeGreaterThanOrEqual(1);
      expect(await exists('deliveries', old)).toBe(false);
      await pruner.stop();
    } finally {
      await other.end();
    }
  });

  test('a server prunes on start, with SWITCHBOARD_RETENTION_DAYS', async () => {
    const shared = await createTestDatabase();
    const sql = shared.sql;
    const insert = (days: number) => sql<[{ id: number }]>`
      insert into deliveries (source, kind, delivery_id, event, disposition, facts, body_sha256,
                              received_at)
      values ('github', 'github', ${randomUUID()}, 'push', 'no_rule', '{}', ${randomBytes(32)},
              now() - make_interval(days => ${days}))
      returning id`;
    const [[older], [newer]] = await Promise.all([insert(11), insert(9)]);
    // The server as `switchboard up` starts it: its settings read from the environment.
    const dir = await mkdtemp(join(tmpdir(), 'switchboard-retention-'));
    const config = loadServerConfig({
      DATABASE_URL: shared.url,
      PORT: '0',
      SWITCHBOARD_DATA_DIR: dir,
      XDG_CONFIG_HOME: dir,
      SWITCHBOARD_RETENTION_DAYS: '10',
    });
    const server = await startServer({ config, log: silentLogger, schema: shared.schema });
    try {
      await expect
        .poll(async () => (await sql`select id from deliveries`).map((row) => Number(row.id)))
        .toEqual([Number(newer.id)]);
      expect(Number(older.id)).not.toBe(Number(newer.id));
    } finally {
      await server.close();
      await shared.drop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('SWITCHBOARD_RETENTION_DAYS', () => {
  test('30 days unless set; at least 4, to outlast GitHub’s three-day delivery log', () => {
    expect(loadServerConfig({}).retentionDays).toBe(30);
    expect(loadServerConfig({ SWITCHBOARD_RETENTION_DAYS: '90' }).retentionDays).toBe(90);
    expect(() => loadServerConfig({ SWITCHBOARD_RETENTION_DAYS: '3' })).toThrow(
      "SWITCHBOARD_RETENTION_DAYS: must be at least 4 (days), to outlast GitHub's 3-day delivery log",
    );
    expect(() => loadServerConfig({ SWITCHBOARD_RETENTION_DAYS: 'a month' })).toThrow(
      /^SWITCHBOARD_RETENTION_DAYS: /,
    );
    expect(loadServerConfig({}).reconcileMinutes).toBe(5);
    expect(loadServerConfig({ SWITCHBOARD_RECONCILE_MINUTES: '0' }).reconcileMinutes).toBe(0);
  });
});

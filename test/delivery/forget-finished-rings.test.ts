import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import { forgetFinishedRings } from '../../src/data/wakes/forget-finished-rings.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());
beforeEach(async () => {
  await db.sql`truncate todos, todo_rings cascade`;
});

/** `count` todos from `from` on, in `state`, each with a ring row (due, or not) unless `ring` is none. */
async function addTodos(
  from: number,
  count: number,
  state: string,
  ring: 'due' | 'later' | 'none',
) {
  await db.sql.begin(async (tx) => {
    await tx`
      insert into todos (id, queue, kind, title, state, source, attributed_to, available_at,
                         claimed_by, lease_token)
      overriding system value
      select g, 'work', 'manual', 'todo ' || g, ${state}::todo_state, 'cli', 'someone',
             case ${state} when 'pending' then now() when 'claimed' then now() + interval '5 min' end,
             case when ${state} = 'claimed' then 'agent' end,
             case when ${state} = 'claimed' then gen_random_uuid() end
      from generate_series(${from}::int, ${from + count - 1}::int) g`;
    if (ring !== 'none') {
      await tx`
        insert into todo_rings (todo_id, rings, next_ring_at)
        select g, 1, now() + ${ring === 'due' ? '-1 second' : '1 hour'}::interval
        from generate_series(${from}::int, ${from + count - 1}::int) g`;
    }
  });
}

const ringsLeft = async () =>
  (await db.sql<{ todo_id: string }[]>`select todo_id from todo_rings order by todo_id`).map(
    (row) => Number(row.todo_id),
  );

/** How many times `work` read the todos table: by sequential scan, and by index. */
async function readsOfTodos(work: (sql: typeof db.sql) => Promise<void>) {
  const one = await db.sql.reserve();
  try {
    const reads = async () => {
      await one`select pg_stat_force_next_flush()`;
      const [row] = await one<[{ seq: string; idx: string }]>`
        select seq_scan::text as seq, idx_scan::text as idx from pg_stat_user_tables
        where schemaname = ${db.schema} and relname = 'todos'`;
      return { seq: Number(row.seq), idx: Number(row.idx) };
    };
    const before = await reads();
    await work(one);
    const after = await reads();
    return { seq: after.seq - before.seq, idx: after.idx - before.idx };
  } finally {
    one.release();
  }
}

test('the due rings of claimed and finished todos go; those of pending todos stay, and the rest wait until due', async () => {
  await addTodos(1, 3, 'pending', 'due');
  await addTodos(4, 2, 'claimed', 'due');
  await addTodos(6, 2, 'done', 'due');
  await addTodos(8, 1, 'claimed', 'later');
  await forgetFinishedRings(db.sql);
  expect(await ringsLeft()).toEqual([1, 2, 3, 8]);
});

// Found by the growth benchmark (bench/growth.ts): the dispatcher sweeps these rows every second
// in every process, and as a join the planner hashed the ring rows and read every todo ever
// made — at 10⁶ todos with 10⁵ waiting, 0.8 s of a core each second. Now each ring row's todo is
// looked up by its key, so the sweep reads what is rung, not the ledger's history.
test('regression: sweeping finished rings read every todo in the ledger', async () => {
  await addTodos(1, 18_000, 'done', 'none');
  await addTodos(18_001, 2_000, 'pending', 'due');
  await db.sql`analyze todos, todo_rings`;
  expect((await readsOfTodos(forgetFinishedRings)).seq).toBe(0);
  expect(await ringsLeft()).toHaveLength(2_000);
});

// Found by probing an idle server over a big ledger: the sweep looked up every ring's todo, so it
// cost what waits — 79 ms a pass, every second in every process, with 2 × 10⁴ todos waiting in a
// 10⁶-todo ledger. Now it looks only at the rings that are due.
test('regression: sweeping finished rings read every waiting todo every second', async () => {
  await addTodos(1, 2_000, 'pending', 'later');
  await addTodos(2_001, 10, 'done', 'due');
  await db.sql`analyze todos, todo_rings`;
  expect(await readsOfTodos(forgetFinishedRings)).toEqual({ seq: 0, idx: 10 });
  expect(await ringsLeft()).toHaveLength(2_000);
});

import { afterAll, beforeAll, expect, test } from 'vitest';
import { forgetFinishedRings } from '../../src/delivery/forget-finished-rings.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

/** `count` todos from `from` on, in `state`, each with a ring row when `rung`. */
async function addTodos(from: number, count: number, state: string, rung: boolean) {
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
    if (rung) {
      await tx`
        insert into todo_rings (todo_id, rings, next_ring_at)
        select g, 1, now() + interval '1 hour'
        from generate_series(${from}::int, ${from + count - 1}::int) g`;
    }
  });
}

test('the rings of claimed and finished todos go, those of pending todos stay', async () => {
  await addTodos(1, 3, 'pending', true);
  await addTodos(4, 2, 'claimed', true);
  await addTodos(6, 2, 'done', true);
  await forgetFinishedRings(db.sql);
  const left = await db.sql<{ todo_id: number }[]>`select todo_id from todo_rings order by todo_id`;
  expect(left.map((row) => Number(row.todo_id))).toEqual([1, 2, 3]);
  await db.sql`delete from todo_rings`;
  await db.sql`delete from todos`;
});

// Found by the growth benchmark (bench/growth.ts): the dispatcher sweeps these rows every second
// in every process, and as a join the planner hashed the ring rows and read every todo ever
// made — at 10⁶ todos with 10⁵ waiting, 0.8 s of a core each second. Now each ring row's todo is
// looked up by its key, so the sweep reads what is rung, not the ledger's history.
test('regression: sweeping finished rings read every todo in the ledger', async () => {
  await addTodos(1, 18_000, 'done', false);
  await addTodos(18_001, 2_000, 'pending', true);
  await db.sql`analyze todos, todo_rings`;
  const one = await db.sql.reserve();
  try {
    const seqScans = async () => {
      await one`select pg_stat_force_next_flush()`;
      const [{ n }] = await one<[{ n: string }]>`
        select seq_scan::text as n from pg_stat_user_tables
        where schemaname = ${db.schema} and relname = 'todos'`;
      return Number(n);
    };
    const before = await seqScans();
    await forgetFinishedRings(one);
    expect(await seqScans()).toBe(before);
    const [{ rings }] = await one<
      [{ rings: number }]
    >`select count(*)::int as rings from todo_rings`;
    expect(rings).toBe(2_000);
  } finally {
    one.release();
  }
});

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  cancelTodo,
  claimTodo,
  completeTodo,
  createTodo,
  decideApproval,
  failTodo,
  getTodoWithHistory,
  heartbeatTodo,
  LedgerError,
  releaseQuarantinedTodo,
  releaseTodo,
  requestApproval,
  type Todo,
} from '../../src/data/index.js';
import { createCast, type Cast } from '../support/principals.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

let db: TestDatabase;
let cast: Cast;
beforeAll(async () => {
  db = await createTestDatabase();
  cast = await createCast(db.sql);
});
afterAll(() => db.drop());

interface Subject {
  id: number;
  /** The lease token of the latest claim, if there was one (a stale one after it ended). */
  token: string;
}

/** Ways to put a fresh todo into each state the machine knows. */
const setups: Record<string, () => Promise<Subject>> = {
  pending: async () => {
    const { todo } = await createTodo(db.sql, cast.bob, {
      queue: 'reviews',
      title: 'pending',
      source: 'cli',
    });
    return { id: todo.id, token: randomUUID() };
  },
  claimed: async () => {
    const { id } = await setups.pending!();
    const claimed = await claimTodo(db.sql, cast.bot, id);
    return { id, token: claimed.lease_token };
  },
  done: async () => {
    const subject = await setups.claimed!();
    await completeTodo(db.sql, cast.bot, subject.id, subject.token, { summary: 'did it' });
    return subject;
  },
  'failed (retrying)': async () => {
    const subject = await setups.claimed!();
    await failTodo(db.sql, cast.bot, subject.id, subject.token, 'broke');
    return subject;
  },
  'failed (dead)': async () => {
    const { todo } = await createTodo(db.sql, cast.bob, {
      queue: 'reviews',
      title: 'one shot',
      source: 'cli',
      max_attempts: 1,
    });
    const claimed = await claimTodo(db.sql, cast.bot, todo.id);
    await failTodo(db.sql, cast.bot, todo.id, claimed.lease_token, 'broke for good');
    return { id: todo.id, token: claimed.lease_token };
  },
  canceled: async () => {
    const subject = await setups.pending!();
    await cancelTodo(db.sql, cast.bob, subject.id);
    return subject;
  },
  quarantined: async () => {
    const { todo } = await createTodo(db.sql, cast.github, {
      queue: 'reviews',
      title: 'from a stranger',
      source: 'github',
      attributed_to: 'mallory',
      quarantined: true,
    });
    return { id: todo.id, token: randomUUID() };
  },
  'approval (waiting)': async () => {
    const todo = await requestApproval(db.sql, cast.bot, { question: 'may I?', source: 'mcp' });
    return { id: todo.id, token: randomUUID() };
  },
};

/** Every operation, each by the actor who would normally perform it. */
const operations: Record<string, (subject: Subject) => Promise<Todo>> = {
  claim: ({ id }) => claimTodo(db.sql, cast.bot, id),
  heartbeat: ({ id, token }) => heartbeatTodo(db.sql, cast.bot, id, token),
  complete: ({ id, token }) => completeTodo(db.sql, cast.bot, id, token, { summary: 'ok' }),
  fail: ({ id, token }) => failTodo(db.sql, cast.bot, id, token, 'nope'),
  release: ({ id, token }) => releaseTodo(db.sql, cast.bot, id, token),
  cancel: ({ id }) => cancelTodo(db.sql, cast.bob, id),
  'release quarantine': ({ id }) => releaseQuarantinedTodo(db.sql, cast.bob, id),
  approve: ({ id }) => decideApproval(db.sql, cast.bob, id, 'allow'),
};

type Outcome = string; // the state afterwards, or `!code` for a refusal

// Rows: the state before; columns: the operation; cells: the state after or the refusal code.
// A claim of a quarantined todo by an agent is "not found": agents never see quarantined work.
const table: Record<string, Record<keyof typeof operations, Outcome>> = {
  pending: {
    claim: 'claimed',
    heartbeat: '!lease_lost',
    complete: '!lease_lost',
    fail: '!lease_lost',
    release: '!lease_lost',
    cancel: 'canceled',
    'release quarantine': '!conflict',
    approve: '!conflict',
  },
  claimed: {
    claim: '!conflict',
    heartbeat: 'claimed',
    complete: 'done',
    fail: 'failed',
    release: 'pending',
    cancel: '!conflict',
    'release quarantine': '!conflict',
    approve: '!conflict',
  },
  done: {
    claim: '!conflict',
    heartbeat: '!lease_lost',
    complete: '!lease_lost',
    fail: '!lease_lost',
    release: '!lease_lost',
    cancel: '!conflict',
    'release quarantine': '!conflict',
    approve: '!conflict',
  },
  'failed (retrying)': {
    claim: '!conflict',
    heartbeat: '!lease_lost',
    complete: '!lease_lost',
    fail: '!lease_lost',
    release: '!lease_lost',
    cancel: 'canceled',
    'release quarantine': '!conflict',
    approve: '!conflict',
  },
  'failed (dead)': {
    claim: '!conflict',
    heartbeat: '!lease_lost',
    complete: '!lease_lost',
    fail: '!lease_lost',
    release: '!lease_lost',
    cancel: 'canceled',
    'release quarantine': '!conflict',
    approve: '!conflict',
  },
  canceled: {
    claim: '!conflict',
    heartbeat: '!lease_lost',
    complete: '!lease_lost',
    fail: '!lease_lost',
    release: '!lease_lost',
    cancel: '!conflict',
    'release quarantine': '!conflict',
    approve: '!conflict',
  },
  quarantined: {
    claim: '!not_found',
    heartbeat: '!not_found',
    complete: '!not_found',
    fail: '!not_found',
    release: '!not_found',
    cancel: 'canceled',
    'release quarantine': 'pending',
    approve: '!conflict',
  },
  'approval (waiting)': {
    claim: '!conflict',
    heartbeat: '!lease_lost',
    complete: '!lease_lost',
    fail: '!lease_lost',
    release: '!lease_lost',
    cancel: 'canceled',
    'release quarantine': '!conflict',
    approve: 'done',
  },
};

describe.each(Object.entries(table))('from %s', (from, row) => {
  test.each(Object.entries(row))('%s → %s', async (operation, expected) => {
    const subject = await setups[from]!();
    const before = await getTodoWithHistory(db.sql, cast.ada, subject.id);
    const attempt = operations[operation]!(subject);
    if (expected.startsWith('!')) {
      await expect(attempt).rejects.toMatchObject({ name: 'LedgerError', code: expected.slice(1) });
      // A refusal changes nothing: same row, no new history.
      expect(await getTodoWithHistory(db.sql, cast.ada, subject.id)).toEqual(before);
    } else {
      const after = await attempt;
      expect(after.state).toBe(expected);
      const { history } = await getTodoWithHistory(db.sql, cast.ada, subject.id);
      expect(history).toHaveLength(before.history.length + 1);
    }
  });
});

test('refusals explain the current state', async () => {
  const { id, token } = await setups.claimed!();
  const refusal = await claimTodo(db.sql, cast.other, id).catch((error: unknown) => error);
  // `other` works queue `issues`, so it cannot even see a `reviews` todo.
  expect(refusal).toMatchObject({ code: 'not_found', message: `todo #${id} not found` });
  await expect(claimTodo(db.sql, cast.bob, id)).rejects.toThrow(/is claimed by bot until \d{4}-/);
  await completeTodo(db.sql, cast.bot, id, token);
  await expect(completeTodo(db.sql, cast.bot, id, token)).rejects.toThrow(
    `lease on todo #${id} is lost: it is done`,
  );
});

test('the holder, the time and the lease are recorded on claim, and cleared on release', async () => {
  const { id } = await setups.pending!();
  const claimed = await claimTodo(db.sql, cast.bot, id, 60);
  expect(claimed).toMatchObject({ state: 'claimed', claimed_by: 'bot', attempt: 1 });
  const leaseMs = claimed.lease_expires_at!.getTime() - claimed.updated_at.getTime();
  expect(leaseMs).toBeGreaterThanOrEqual(59_000);
  expect(leaseMs).toBeLessThanOrEqual(61_000);
  const released = await releaseTodo(db.sql, cast.bot, id, claimed.lease_token);
  expect(released).toMatchObject({
    state: 'pending',
    claimed_by: null,
    lease_expires_at: null,
    attempt: 0,
  });
});

test('lease length is bounded: 1 second to 24 hours', async () => {
  const { id } = await setups.pending!();
  for (const lease of [0, -5, 86_401, 1.5]) {
    await expect(claimTodo(db.sql, cast.bot, id, lease)).rejects.toMatchObject({ code: 'invalid' });
  }
  const claimed = await claimTodo(db.sql, cast.bot, id, 86_400);
  await expect(
    heartbeatTodo(db.sql, cast.bot, id, claimed.lease_token, 86_401),
  ).rejects.toBeInstanceOf(LedgerError);
});

test('the database itself refuses states that break the rules', async () => {
  const { id } = await setups.pending!();
  await expect(
    db.sql`update todos set state = 'claimed', claimed_by = 'bot', available_at = now() + interval '1 minute' where id = ${id}`,
  ).rejects.toThrow(/todos_lease_matches_state/);
  await expect(
    db.sql`update todos set state = 'claimed', lease_token = gen_random_uuid() where id = ${id}`,
  ).rejects.toThrow(/todos_lease_matches_state/);
  await expect(
    db.sql`update todos set state = 'done', available_at = null, verdict = 'allow', decided_by = 'bob', decided_at = now() where id = ${id}`,
  ).rejects.toThrow(/todos_verdicts_end_approvals/);
  await expect(db.sql`update todos set verdict = 'allow' where id = ${id}`).rejects.toThrow(
    /only a human may decide/,
  );
  await expect(db.sql`update todos set title = ${'two\nlines'} where id = ${id}`).rejects.toThrow(
    /todo_title_is_one_clean_line/,
  );
  const approval = await requestApproval(db.sql, cast.bot, { question: 'ok?', source: 'mcp' });
  await expect(
    db.sql`update todos set state = 'done', verdict = 'allow', decided_by = 'bot', decided_at = now() where id = ${approval.id}`,
  ).rejects.toThrow(/only a human may decide/);
});

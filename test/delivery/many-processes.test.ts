import { afterAll, beforeAll, expect, test } from 'vitest';
import { openEventStream } from '../support/event-stream.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const TIMING = {
  rerings: [60_000],
  scanMs: 50,
  heartbeatMs: 200,
  sessionTtlMs: 2000,
  catchUpMs: 60_000,
};

let a: TestServer;
let b: TestServer;
let human: string;
let agentToken: string;

beforeAll(async () => {
  // Two server processes on one database (one schema): what a load balancer would sit in front of.
  a = await startTestServer({ deliveryTiming: TIMING });
  b = await startTestServer({ schema: a.schema, deliveryTiming: TIMING });
  human = (await a.api(a.adminToken, 'POST', '/humans', { name: 'bob' })).body.token;
  agentToken = (await a.api(human, 'POST', '/agents', { name: 'bot', queues: ['shared'] })).body
    .token;
});
afterAll(async () => {
  await b.stop();
  await a.stop();
});

test('a session attached to one process is woken for a todo created through the other', async () => {
  const stream = await openEventStream(b.url, agentToken);
  try {
    const { body } = await a.api(human, 'POST', '/todos', { queue: 'shared', title: 'made on A' });
    const wake = await stream.waitFor((e) => e.event === 'wake' && e.data.todo_id === body.todo.id);
    expect(wake.data).toMatchObject({ type: 'wake', queue: 'shared', title: 'made on A' });
    // Claimed through B, where the session is.
    expect(
      (await b.api(agentToken, 'POST', `/todos/${body.todo.id}/claim`)).body.todo.claimed_by,
    ).toBe('bot');
  } finally {
    stream.close();
  }
});

test('both processes hear every wake, yet each todo is rung exactly once, round-robin across them', async () => {
  const onA = await openEventStream(a.url, agentToken);
  const onB = await openEventStream(b.url, agentToken);
  try {
    const ids: number[] = [];
    for (let i = 0; i < 6; i++) {
      const server = i % 2 ? a : b;
      ids.push(
        (await server.api(human, 'POST', '/todos', { queue: 'shared', title: `todo ${i}` })).body
          .todo.id,
      );
      await expect.poll(() => onA.wakes().length + onB.wakes().length).toBe(i + 1);
    }
    expect(onA.wakes()).toHaveLength(3);
    expect(onB.wakes()).toHaveLength(3);
    // A ring is recorded once its push is done: the last record may follow its wake.
    const rings = async () =>
      (
        await a.sql<[{ rings: number }]>`
          select count(*) as rings from todo_events where action = 'rung' and todo_id = any(${ids}::bigint[])`
      )[0].rings;
    await expect.poll(rings).toBe(6);
  } finally {
    onA.close();
    onB.close();
  }
});

test('when the database connection behind LISTEN drops, the dispatcher re-listens and catches up', async () => {
  const stream = await openEventStream(a.url, agentToken);
  try {
    // A todo committed while nobody listened: written with triggers off, so no wake was ever sent.
    const [lost] = await a.sql.begin(async (tx) => {
      await tx`set local session_replication_role = replica`;
      return tx`
        insert into todos (queue, kind, title, source, attributed_to, available_at)
        values ('shared', 'manual', 'committed while deaf', 'cli', 'bob', now()) returning id`;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(stream.wakes().map((w) => w.todo_id)).not.toContain(lost!.id);
    // Drop the listening connections of both processes: on re-listen they read what they missed.
    const killed = await a.sql`
      select pg_terminate_backend(pid) from pg_stat_activity where query like ${`listen "${a.schema}.%`}`;
    expect(killed.length).toBe(2);
    const wake = await stream.waitFor(
      (e) => e.event === 'wake' && e.data.todo_id === lost!.id,
      15_000,
    );
    expect(wake.data.title).toBe('committed while deaf');
    // And new wakes flow again.
    const { body } = await b.api(human, 'POST', '/todos', {
      queue: 'shared',
      title: 'after the drop',
    });
    await stream.waitFor((e) => e.event === 'wake' && e.data.todo_id === body.todo.id, 15_000);
  } finally {
    stream.close();
  }
});

// Found by a rare failure of the test above under load: after both processes lost their LISTEN,
// the other process's catch-up rang the todo to this process's session and told it over NOTIFY
// before this process listened again; the message went nowhere, and the todo waited for its
// next re-ring. Now a process that listens again re-rings what was rung to its sessions unheard.
test('regression: a ring sent to a process that was not listening yet waited for the next re-ring', async () => {
  const stream = await openEventStream(a.url, agentToken);
  try {
    // This stream's own session (a query by principal could also find the previous test's
    // stream, closed but perhaps not yet detached).
    const sessionId = stream.events.find((e) => e.event === 'ready')!.data.session_id as string;
    // A ring taken for that session by another process, its NOTIFY lost: the ring row says who
    // was rung, and no `rung` was ever recorded. Its next re-ring is an hour away.
    const [unheard] = await a.sql.begin(async (tx) => {
      await tx`set local session_replication_role = replica`;
      const [todo] = await tx<{ id: number }[]>`
        insert into todos (queue, kind, title, source, attributed_to, available_at)
        values ('shared', 'manual', 'rung while deaf', 'cli', 'bob', now()) returning id`;
      await tx`
        insert into todo_rings (todo_id, rings, next_ring_at, last_session, wake_id)
        values (${todo!.id}, 1, now() + interval '1 hour', ${sessionId}, 'lost')`;
      return [todo!];
    });
    await a.sql`
      select pg_terminate_backend(pid) from pg_stat_activity where query like ${`listen "${a.schema}.%`}`;
    const wake = await stream.waitFor(
      (e) => e.event === 'wake' && e.data.todo_id === unheard.id,
      15_000,
    );
    expect(wake.data.title).toBe('rung while deaf');
  } finally {
    stream.close();
  }
});

test('a token revoked through one process is refused by the other at once, though it had it in memory', async () => {
  const { body } = await a.api(human, 'POST', '/agents', {
    name: 'short-lived',
    queues: ['shared'],
  });
  const token = body.token as string;
  // Used on both processes: each now answers it from memory.
  expect((await a.api(token, 'GET', '/whoami')).status).toBe(200);
  expect((await b.api(token, 'GET', '/whoami')).status).toBe(200);
  expect((await a.api(human, 'POST', '/agents/short-lived/revoke')).status).toBe(200);
  // The revoking process forgot it before answering; the other hears the revocation's NOTIFY
  // (long before the minute a remembered token would otherwise last).
  expect((await a.api(token, 'GET', '/whoami')).status).toBe(401);
  await expect
    .poll(async () => (await b.api(token, 'GET', '/whoami')).status, { timeout: 5000 })
    .toBe(401);
});

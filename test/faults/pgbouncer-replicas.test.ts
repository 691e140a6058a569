import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sign } from '@octokit/webhooks-methods';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, inject, onTestFailed, onTestFinished, test } from 'vitest';
import { connect, openDatabase } from '../../src/platform/db/open-database.js';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';
import {
  actorFor,
  createAgent,
  createHuman,
  issueToken,
  systemActor,
} from '../../src/data/index.js';
import { silentLogger } from '../../src/platform/logger.js';
import { createCliHome, runCli, type CliHome } from '../cli/support/run-cli.js';
import { deliver, readFixture } from '../github/deliver.js';
import { openEventStream, type EventStreamClient } from '../support/event-stream.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { findPgBouncer, startPgBouncer, type PgBouncer } from '../support/start-pgbouncer.js';
import { requireTool } from '../support/require-tool.js';
import { startRoundRobinProxy, type RoundRobinProxy } from '../support/start-round-robin-proxy.js';

/** How long the workers and the senders keep at it; the replicas are killed and restarted meanwhile. */
const LOAD_MS = 60_000;
const REPLICAS = 3;
const WORKERS = 8;
const SENDERS = 16;
/** Short, so that a claim whose answer a killed replica took with it is claimable again soon. */
const LEASE_SECONDS = 10;
/** PgBouncer's server connections, shared by every replica's pool (each up to 20 clients). */
const POOL_SIZE = 10;
/**
 * Senders hold back while this many of their todos wait to be completed: the load follows what
 * the machine can do (a backlog growing without end only makes every wake late), so the queue
 * drains within a lease once the senders stop.
 */
const MAX_WAITING = 2 * WORKERS;
const SECRET = 'pgbouncer-test-webhook-secret';
/** The connections the test's own pool opens, told apart from the replicas' in pg_stat_activity. */
const TEST_APPLICATION = 'pgbouncer-test';

requireTool('pgbouncer', findPgBouncer() !== undefined, 'apt-get install -y pgbouncer');

let bouncer: PgBouncer;
let database: string;
let directUrl: string;
let runDatabase: string;
let db: postgres.Sql;
let admin: postgres.Sql;
const homes: CliHome[] = [];

beforeAll(async () => {
  // A database of the test's own, with switchboard's schema first on its default search path:
  // through a transaction pooler, that is where the schema comes from (README, Behind PgBouncer).
  const runUrl = new URL(inject('databaseUrl'));
  runDatabase = runUrl.pathname.slice(1);
  database = `sb_pgbouncer_${randomBytes(4).toString('hex')}`;
  admin = postgres(runUrl.href, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${database}`);
  await admin.unsafe(`alter database ${database} set search_path = switchboard`);
  const direct = new URL(runUrl);
  direct.pathname = `/${database}`;
  directUrl = direct.href;
  bouncer = await startPgBouncer({
    serverUrl: runUrl.href,
    // `plain`: the run's own database, whose search path does not name switchboard.
    databases: { switchboard: database, plain: runDatabase },
    poolSize: POOL_SIZE,
  });
  db = connect(directUrl, {
    schema: 'switchboard',
    max: 4,
    log: silentLogger,
    applicationName: TEST_APPLICATION,
  });
});

afterAll(async () => {
  await db?.end({ timeout: 1 });
  await bouncer?.stop();
  if (database) await admin.unsafe(`drop database if exists ${database} with (force)`);
  await admin?.end({ timeout: 1 });
  await Promise.all(homes.map((home) => home.remove()));
});

/** What openDatabase throws for these URLs (the tests below are of its refusals). */
const refusalOf = (urls: { databaseUrl: string; databaseDirectUrl?: string }) =>
  openDatabase({ ...urls, dataDir: '/nonexistent', log: silentLogger }).then(
    () => {
      throw new Error('openDatabase accepted what it should refuse');
    },
    (e: unknown) => e as Error & { code?: string },
  );

test('behind a pooler without DATABASE_DIRECT_URL, the start is refused in one line saying to set it', async () => {
  const error = await refusalOf({
    databaseUrl: bouncer.url('switchboard'),
  });
  expect(error.code).toBe('database_unusable');
  expect(error.message).toBe(
    `cannot use the PostgreSQL at DATABASE_URL (127.0.0.1:${bouncer.port}/switchboard): unsupported startup parameter: search_path — is it a pooler? Then set DATABASE_DIRECT_URL to the PostgreSQL behind it (README, "Behind PgBouncer")`,
  );
});

test('through the pooler, a database whose search path does not start with the schema is refused, with the statement that fixes it', async () => {
  const direct = new URL(directUrl);
  direct.pathname = `/${runDatabase}`;
  const error = await refusalOf({
    databaseUrl: bouncer.url('plain'),
    databaseDirectUrl: direct.href,
  });
  expect(error.code).toBe('database_unusable');
  expect(error.message).toMatch(
    new RegExp(
      `^through the pooler at DATABASE_URL the search_path is '.*', not switchboard first: .*alter database ${runDatabase} set search_path = switchboard`,
    ),
  );
  expect(error.message).not.toContain(decodeURIComponent(direct.password));
});

test('a DATABASE_DIRECT_URL that is not the database behind the pooler is refused: its LISTEN would hear nothing', async () => {
  const elsewhere = new URL(directUrl);
  elsewhere.pathname = `/${runDatabase}`;
  const error = await refusalOf({
    databaseUrl: bouncer.url('switchboard'),
    databaseDirectUrl: elsewhere.href,
  });
  expect(error.code).toBe('database_unusable');
  expect(error.message).toMatch(
    new RegExp(
      `^DATABASE_DIRECT_URL does not reach the database behind DATABASE_URL \\(database ${runDatabase} of a server started .*, not ${database} of one started`,
    ),
  );
});

test('DATABASE_DIRECT_URL without DATABASE_URL is a usage error, in one line', async () => {
  const home = await createCliHome();
  homes.push(home);
  const result = await runCli(['up', '--port', '0'], {
    ...home.env,
    SWITCHBOARD_DATA_DIR: join(home.dir, 'data'),
    DATABASE_DIRECT_URL: directUrl,
  });
  expect(result.code).toBe(2);
  expect(result.stderr).toBe(
    "DATABASE_DIRECT_URL is set without DATABASE_URL: it is the direct address of the PostgreSQL behind DATABASE_URL's pooler — set DATABASE_URL to the pooler, or unset both\n",
  );
});

interface Delivery {
  id: string;
  body: string;
  signature: string;
  /** Each attempt's answer: an HTTP status, or 'no answer' (refused, cut off, timed out). */
  attempts: (number | 'no answer')[];
}

type Answer = { status: number | 'no answer'; body: any };

async function call(
  base: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Answer> {
  try {
    const response = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(20_000),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  } catch {
    return { status: 'no answer', body: null };
  }
}

const is2xx = (status: number | 'no answer') =>
  typeof status === 'number' && status >= 200 && status < 300;

test(
  `${REPLICAS} replicas behind PgBouncer (transaction mode) and a round-robin proxy: ${WORKERS} workers and ${SENDERS} senders for ${LOAD_MS / 1000} s through a SIGKILL and a rolling restart — nothing lost, nothing doubled, every wake heard across replicas`,
  { timeout: LOAD_MS + 120_000 },
  async () => {
    const started = Date.now();
    const ports = await Promise.all(Array.from({ length: REPLICAS }, () => freePort()));
    for (let i = 0; i < REPLICAS; i++) homes.push(await createCliHome());
    const env = (i: number) => ({
      ...homes[i]!.env,
      SWITCHBOARD_DATA_DIR: join(homes[i]!.dir, 'data'),
      DATABASE_URL: bouncer.url('switchboard'),
      DATABASE_DIRECT_URL: directUrl,
      WEBHOOK_SECRET: SECRET,
      LOG_LEVEL: 'warn',
    });
    const everyStart: ServerProcess[] = [];
    const startReplica = async (i: number) => {
      const replica = await startServerProcess(ports[i]!, env(i));
      everyStart.push(replica);
      return replica;
    };
    // What the replicas logged (warnings and errors) says why, when something was not as it should be.
    onTestFailed(() => {
      for (const replica of everyStart) {
        console.error(`replica pid ${replica.pid} logged:\n${replica.stderr().slice(-3000)}`);
      }
    });
    // Three at once: they migrate the new database together (one applies, the others wait).
    const replicas: ServerProcess[] = await Promise.all(ports.map((_, i) => startReplica(i)));
    const proxy: RoundRobinProxy = await startRoundRobinProxy(ports);

    const system = systemActor('test');
    const ops = await createHuman(db, system, { name: 'ops', is_admin: true });
    const agent = async (name: string, queue: string) =>
      issueToken(
        db,
        (await createAgent(db, actorFor(ops, 'cli'), { name, queues: [queue] })).id,
        'agent_add',
      );
    const opsToken = await issueToken(db, ops.id, 'human_add');
    const [fixer, watcher, pager] = await Promise.all([
      agent('fixer', 'issues'),
      agent('watcher', 'wakes'),
      agent('pager', 'pages'),
    ]);

    const create = async (replica: number, queue: string, title: string): Promise<number> => {
      const answer = await call(replicas[replica]!.url, opsToken, 'POST', '/todos', {
        queue,
        title,
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      return answer.body.todo.id as number;
    };
    const cancel = async (id: number, again = false): Promise<void> => {
      const answer = await call(proxy.url, opsToken, 'POST', `/todos/${id}/cancel`, {});
      // Through the proxy: a replica being restarted answers 502, and the cancel is sent again
      // (then "already canceled" may be the answer, when the first one did it).
      if (answer.status === 502 || answer.status === 'no answer') return cancel(id, true);
      if (again && answer.status === 409 && /is canceled/.test(answer.body.error)) return;
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    };
    const sessionsOf = async (principal: string) => {
      const [{ sessions }] = await db<[{ sessions: number }]>`
        select count(*)::int as sessions from consumer_sessions where principal = ${principal}`;
      return sessions;
    };
    /** Closes a consumer's event stream, and waits until its replica has let the session go. */
    const detach = async (stream: EventStreamClient, principal: string) => {
      stream.close();
      await expect.poll(() => sessionsOf(principal)).toBe(0);
    };
    /** Waits for the wake of todo `id` on `stream`; failing, says what the todo's history says. */
    const heard = async (stream: EventStreamClient, id: number) => {
      try {
        await expect.poll(() => stream.wakes().some((wake) => wake.todo_id === id)).toBe(true);
      } catch (error) {
        const history = await db`
          select at, action, data from todo_events where todo_id = ${id} order by at, id`;
        const sessions = await db`select * from consumer_sessions`;
        const processes = await db`select * from consumer_processes`;
        const rings = await db`select * from todo_rings where todo_id = ${id}`;
        throw new Error(
          `no wake of #${id}: ${JSON.stringify({ events: stream.events, history, sessions, processes, rings })}`,
          { cause: error },
        );
      }
    };

    // --- Connections, sampled throughout: to PostgreSQL by kind, and the pooler's clients.
    const peak = { direct: 0, pooledServer: 0, poolerClients: 0, pooledListens: 0 };
    let sampling = true;
    /** The test ended before its load did (it failed): every loop gives up at once. */
    let abandoned = false;
    const sampler = (async () => {
      while (sampling) {
        const rows = await db<{ application_name: string; n: number; listens: number }[]>`
          select application_name, count(*)::int as n,
                 count(*) filter (where query ~* '^\\s*(un)?listen\\s')::int as listens
          from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid()
            and application_name <> ${TEST_APPLICATION}
          group by application_name`;
        const direct = rows.find((row) => row.application_name === 'switchboard direct');
        const pooled = rows.filter((row) => row.application_name !== 'switchboard direct');
        peak.direct = Math.max(peak.direct, direct?.n ?? 0);
        peak.pooledServer = Math.max(
          peak.pooledServer,
          pooled.reduce((sum, row) => sum + row.n, 0),
        );
        peak.pooledListens += pooled.reduce((sum, row) => sum + row.listens, 0);
        peak.poolerClients = Math.max(
          peak.poolerClients,
          (await bouncer.clients()).get('switchboard') ?? 0,
        );
        await sleep(250);
      }
    })();
    // Awaited at the end; a test that failed before then stops it below.
    sampler.catch(() => {});

    // --- The load: workers claim and complete over the API, senders deliver signed webhooks.
    const fixture = JSON.parse(await readFixture('issue_comment.created.command'));
    const deliveries: Delivery[] = [];
    let sending = true;
    let made = 0;
    let acknowledged = 0;
    let finished = 0;
    let progress = () => {};
    let progressed = new Promise<void>((resolve) => (progress = resolve));
    const finish = () => {
      finished++;
      progress();
      progressed = new Promise<void>((resolve) => (progress = resolve));
    };
    const sender = async () => {
      for (;;) {
        // Waits for a completion (or, every so often, to see whether to stop).
        while (sending && acknowledged - finished >= MAX_WAITING) {
          await Promise.race([progressed, sleep(200)]);
        }
        if (!sending) return;
        // Taken before any await: each delivery's body is its own (the same signed body under
        // another id would be a replay, recorded as a duplicate that makes nothing).
        const n = made++;
        const payload = structuredClone(fixture);
        payload.comment.id = 800_000_000 + n;
        payload.comment.body = `/switchboard replica delivery ${n}\n\nSent to whichever replica is next.`;
        const body = JSON.stringify(payload);
        const delivery: Delivery = {
          id: randomUUID(),
          body,
          signature: await sign(SECRET, body),
          attempts: [],
        };
        deliveries.push(delivery);
        // As GitHub's redelivery would: the same id and bytes again until it is answered 2xx.
        for (let attempt = 0; ; attempt++) {
          let status: number | 'no answer';
          try {
            const delivered = await deliver(proxy.url, 'issue_comment.created.command', {
              id: delivery.id,
              body: delivery.body,
              signature: delivery.signature,
              signal: AbortSignal.timeout(20_000),
            });
            status = delivered.status;
          } catch {
            status = 'no answer';
          }
          delivery.attempts.push(status);
          if (is2xx(status)) {
            acknowledged++;
            break;
          }
          if (abandoned) return;
          await sleep(Math.min(400, 20 * 2 ** attempt));
        }
      }
    };
    /** Todos a worker was answered 200 for completing; one completed twice would be here twice. */
    const completed: number[] = [];
    let working = true;
    const worker = async () => {
      while (working) {
        const claim = await call(proxy.url, fixer, 'POST', '/queues/issues/claim', {
          lease_seconds: LEASE_SECONDS,
        });
        const todo = claim.status === 200 ? claim.body.todo : null;
        if (!todo) {
          // An empty queue, or a replica that is down: the pace of an idle worker.
          await sleep(50);
          continue;
        }
        for (;;) {
          const done = await call(proxy.url, fixer, 'POST', `/todos/${todo.id}/complete`, {
            lease_token: todo.lease_token,
            summary: 'done',
          });
          if (done.status === 200) completed.push(todo.id);
          if (abandoned) return;
          // Answered for good: done, or refused (the lease ran out, or an attempt whose answer
          // was cut off completed it). No answer, a 502 or a 503: the same request again.
          if (typeof done.status === 'number' && done.status !== 502 && done.status < 500) {
            finish();
            break;
          }
        }
      }
    };
    // However the test ends, the load and the sampling stop with it, before PgBouncer does.
    onTestFinished(async () => {
      sending = working = sampling = false;
      abandoned = true;
      await Promise.allSettled([...senders, ...workers, sampler]);
      await proxy.close();
    });
    const senders = Array.from({ length: SENDERS }, sender);
    const workers = Array.from({ length: WORKERS }, worker);
    const loadStarted = Date.now();

    // --- 1. Every wake for a todo created through one replica reaches a session on another.
    let crossWakes = 0;
    for (let b = 0; b < REPLICAS; b++) {
      const stream = await openEventStream(replicas[b]!.url, watcher);
      for (let a = 0; a < REPLICAS; a++) {
        if (a === b) continue;
        for (let k = 0; k < 3; k++) {
          const id = await create(a, 'wakes', `made on replica ${a}, for a session on ${b}`);
          await heard(stream, id);
          crossWakes++;
          await cancel(id);
        }
      }
      await detach(stream, 'watcher');
    }
    // --- 2. One replica killed with SIGKILL under load, and started again.
    const killed = await replicas[2]!.stop('SIGKILL');
    expect(killed.code).toBeNull();
    /**
     * Replicas on their way back up, started at once: the restarts below begin meanwhile (the
     * proxy answers the share of any replica that is down 502, as before), and each step waits
     * only for the replicas it talks to.
     */
    const restarting = new Map<number, Promise<ServerProcess>>();
    const restart = (i: number) => {
      const started = startReplica(i);
      // Awaited by the step that needs it; until then, a failure to start must not go unhandled.
      started.catch(() => {});
      restarting.set(i, started);
    };
    const up = async (...which: number[]) => {
      for (const i of which) {
        const started = restarting.get(i);
        if (!started) continue;
        replicas[i] = await started;
        restarting.delete(i);
      }
    };
    restart(2);
    // --- 3. A rolling restart of all three, the pager's one session always on the replica that
    // goes next: while it is down the pager has no session anywhere, so its todos take the
    // ladder's last rung (stored), and the digest of its next session catches up on them.
    let stored: number[] = [];
    const digestCatchesUp = (stream: EventStreamClient) => {
      const digested = stream.events
        .filter((event) => event.event === 'digest')
        .flatMap((event) => event.data.todos.map((todo: { todo_id: number }) => todo.todo_id));
      expect(digested).toEqual(expect.arrayContaining(stored));
    };
    const storedRungs = async (ids: number[]) => {
      const [{ stored }] = await db<[{ stored: number }]>`
        select count(distinct todo_id)::int as stored from todo_events
        where todo_id = any(${ids}::bigint[]) and action = 'wake_stored'`;
      return stored;
    };
    let storedWakes = 0;
    for (let i = 0; i < REPLICAS; i++) {
      const other = (i + 1) % REPLICAS;
      await up(i, other);
      const stream = await openEventStream(replicas[i]!.url, pager);
      digestCatchesUp(stream);
      for (const id of stored) await cancel(id);
      const live = await create(other, 'pages', `made on replica ${other} for the pager on ${i}`);
      await heard(stream, live);
      await cancel(live);
      const stopped = await replicas[i]!.stop('SIGTERM');
      expect(stopped.code, stopped.stderr).toBe(0);
      // Back up at once: the pager's session stays away until its todos' rungs are stored.
      restart(i);
      await detach(stream, 'pager');
      stored = [
        await create(other, 'pages', `made on replica ${other} while the pager is away`),
        await create(other, 'pages', `made on replica ${other} while the pager is still away`),
      ];
      await expect.poll(() => storedRungs(stored)).toBe(stored.length);
      storedWakes += stored.length;
    }
    await up(0, 1, 2);
    const last = await openEventStream(replicas[0]!.url, pager);
    digestCatchesUp(last);
    for (const id of stored) await cancel(id);
    await detach(last, 'pager');
    // --- The rest of the load period, then the senders stop and the workers drain the queue.
    await sleep(Math.max(0, LOAD_MS - (Date.now() - loadStarted)));
    sending = false;
    await Promise.all(senders);
    const loadMs = Date.now() - loadStarted;
    const unfinished = async () => {
      const [{ open }] = await db<[{ open: number }]>`
        select count(*)::int as open from todos where queue = 'issues' and state <> 'done'`;
      return open;
    };
    // A claim whose answer was cut off holds its todo until the lease runs out.
    await expect.poll(unfinished, { timeout: 60_000 }).toBe(0);
    working = false;
    await Promise.all(workers);
    // Each replica LISTENs on one direct connection of its own; no LISTEN went through the pooler.
    await expect
      .poll(async () => {
        const [{ listening }] = await db<[{ listening: number }]>`
          select count(*)::int as listening from pg_stat_activity
          where datname = current_database() and application_name = 'switchboard direct'
            and query ~* '^\\s*listen\\s'`;
        return listening;
      })
      .toBe(REPLICAS);
    sampling = false;
    await sampler;
    expect(peak.pooledListens).toBe(0);
    // A session advisory lock (retention's, reconcile's) taken through the pooler would stay on
    // whichever server connection ran it, its unlock sent to another: held by an idle session.
    const [{ leaked }] = await db<[{ leaked: number }]>`
      select count(*)::int as leaked from pg_locks l join pg_stat_activity a on a.pid = l.pid
      where l.locktype = 'advisory' and a.datname = current_database() and a.state = 'idle'
        and a.application_name <> 'switchboard direct'`;
    expect(leaked).toBe(0);

    // --- Nothing lost, nothing doubled.
    expect(deliveries.every((delivery) => is2xx(delivery.attempts.at(-1)!))).toBe(true);
    const ids = deliveries.map((delivery) => delivery.id);
    const rows = await db<
      {
        delivery_id: string;
        recorded: number;
        disposition: string | null;
        todo_id: number | null;
        todos: number;
        todo_by_key: number | null;
      }[]
    >`
      select d.id as delivery_id,
             (select count(*)::int from deliveries g
              where g.source = 'github' and g.delivery_id = d.id and g.disposition <> 'duplicate') as recorded,
             (select g.disposition from deliveries g
              where g.source = 'github' and g.delivery_id = d.id and g.disposition <> 'duplicate') as disposition,
             (select g.todo_id::int from deliveries g
              where g.source = 'github' and g.delivery_id = d.id and g.disposition <> 'duplicate') as todo_id,
             (select count(*)::int from todos t where t.idempotency_key like 'github:' || d.id || ':%') as todos,
             (select t.id::int from todos t where t.idempotency_key = 'github:' || d.id || ':comment') as todo_by_key
      from unnest(${ids}::text[]) as d(id)`;
    // Every delivery answered 2xx is stored, with exactly one todo.
    expect(
      rows.filter(
        (row) =>
          row.recorded !== 1 ||
          row.disposition !== 'created' ||
          row.todos !== 1 ||
          row.todo_id === null ||
          row.todo_id !== row.todo_by_key,
      ),
    ).toEqual([]);
    const [totals] = await db<
      [{ todos: number; done: number; completions: number; twice: number }]
    >`
      select (select count(*)::int from todos where queue = 'issues') as todos,
             (select count(*)::int from todos where queue = 'issues' and state = 'done') as done,
             (select count(*)::int from todo_events e join todos t on t.id = e.todo_id
              where t.queue = 'issues' and e.action = 'completed') as completions,
             (select count(*)::int from (
                select e.todo_id from todo_events e join todos t on t.id = e.todo_id
                where t.queue = 'issues' and e.action = 'completed'
                group by e.todo_id having count(*) > 1) twice) as twice`;
    expect(totals).toEqual({
      todos: deliveries.length,
      done: deliveries.length,
      completions: deliveries.length,
      twice: 0,
    });
    expect(new Set(completed).size).toBe(completed.length);

    const retried = deliveries.filter((delivery) => delivery.attempts.length > 1).length;
    console.info(
      `pgbouncer-replicas: ${deliveries.length} deliveries acknowledged (${retried} after a retry, ` +
        `${proxy.refused()} requests answered 502 by the proxy), ${deliveries.length} todos made and ` +
        `completed once each (${completed.length} answered 200), in ${(loadMs / 1000).toFixed(1)} s of load; ` +
        `${crossWakes} wakes across replicas, ${storedWakes} stored and caught up by the digest; ` +
        `connections at most: ${peak.direct} direct (${REPLICAS} replicas), ${peak.poolerClients} ` +
        `clients of the pooler, ${peak.pooledServer} pooled server connections (pool ${POOL_SIZE}); ` +
        `${((Date.now() - started) / 1000).toFixed(1)} s in all`,
    );

    for (const replica of replicas) {
      const stopped = await replica.stop('SIGTERM');
      expect(stopped.code, stopped.stderr).toBe(0);
    }
  },
);

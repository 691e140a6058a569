import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sign } from '@octokit/webhooks-methods';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { deliver, readFixture } from '../github/deliver.js';
import { createCliHome, type CliHome } from '../cli/support/run-cli.js';
import { freePort, isAlive } from '../../src/platform/db/start-embedded-postgres.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';

const SECRET = 'fault-test-webhook-secret';
const SENDERS = 16;
const PER_SENDER = 12;

let home: CliHome;
let dataDir: string;
let env: Record<string, string>;
let port: number;
let server: ServerProcess | undefined;
const pools: postgres.Sql[] = [];

beforeAll(async () => {
  home = await createCliHome();
  // As root, the embedded PostgreSQL runs as the `postgres` user, which must enter the data directory.
  await chmod(home.dir, 0o755);
  dataDir = join(home.dir, 'data');
  // No DATABASE_URL: `up` runs its own embedded PostgreSQL, as `npm start` does.
  env = { ...home.env, SWITCHBOARD_DATA_DIR: dataDir, WEBHOOK_SECRET: SECRET, LOG_LEVEL: 'warn' };
  port = await freePort();
});

afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end({ timeout: 1 })));
  if (server?.running()) await server.stop('SIGTERM');
  // A failed run may leave a killed server's PostgreSQL behind: stop it as the next start would.
  const pid = await postmasterPid();
  if (pid) {
    process.kill(pid, 'SIGINT');
    for (let waited = 0; isAlive(pid) && waited < 15_000; waited += 100) await sleep(100);
  }
  await home?.remove();
});

const clusterFile = (name: string) => join(dataDir, 'pg', name);

async function postmasterPid(): Promise<number | undefined> {
  const text = await readFile(clusterFile('postmaster.pid'), 'utf8').catch(() => '');
  const pid = Number.parseInt(text.split('\n')[0] ?? '', 10);
  return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : undefined;
}

/** A pool on the server's embedded PostgreSQL as it runs now (its port changes at every start). */
async function openServerDatabase(): Promise<postgres.Sql> {
  const pid = await readFile(clusterFile('postmaster.pid'), 'utf8');
  const dbPort = Number(pid.split('\n')[3]);
  const password = (await readFile(join(dataDir, 'pg-password'), 'utf8')).trim();
  const sql = postgres({
    host: '127.0.0.1',
    port: dbPort,
    user: 'postgres',
    password,
    database: 'switchboard',
    max: 2,
    connection: { search_path: 'switchboard', application_name: 'fault-test' },
    onnotice: () => {},
  });
  pools.push(sql);
  return sql;
}

async function until(what: string, probe: () => boolean | Promise<boolean>, timeoutMs = 30_000) {
  for (const started = Date.now(); !(await probe()); await sleep(20)) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
  }
}

interface Delivery {
  id: string;
  body: string;
  signature: string;
  /** Each attempt's answer: an HTTP status, or 'no answer' (connection refused or cut). */
  attempts: (number | 'no answer')[];
  inFlight: boolean;
}

const is2xx = (outcome: number | 'no answer') =>
  typeof outcome === 'number' && outcome >= 200 && outcome < 300;

test(
  'SIGKILL under 16 senders, twice: every delivery is recorded once with one todo, none twice',
  { timeout: 180_000 },
  async () => {
    server = await startServerProcess(port, env);
    const baseUrl = `http://127.0.0.1:${port}`;

    // A `/switchboard` command comment per delivery, each with a text of its own, so that each
    // delivery makes one todo that can be told apart from every other.
    const fixture = JSON.parse(await readFixture('issue_comment.created.command'));
    const deliveries: Delivery[] = await Promise.all(
      Array.from({ length: SENDERS * PER_SENDER }, async (_, i) => {
        const payload = structuredClone(fixture);
        payload.comment.id = 900_000_000 + i;
        payload.comment.body = `/switchboard fault delivery ${i}\n\nSent while the server is killed.`;
        const body = JSON.stringify(payload);
        return {
          id: randomUUID(),
          body,
          signature: await sign(SECRET, body),
          attempts: [],
          inFlight: false,
        };
      }),
    );
    let answered = 0;

    /** As GitHub's redelivery would: the same id and bytes again, until it is answered 2xx. */
    const deliverUntilAnswered = async (delivery: Delivery) => {
      for (let attempt = 0; ; attempt++) {
        delivery.inFlight = true;
        let outcome: number | 'no answer';
        try {
          const delivered = await deliver(baseUrl, 'issue_comment.created.command', {
            id: delivery.id,
            body: delivery.body,
            signature: delivery.signature,
            signal: AbortSignal.timeout(20_000),
          });
          outcome = delivered.status;
        } catch {
          outcome = 'no answer';
        }
        delivery.inFlight = false;
        delivery.attempts.push(outcome);
        if (is2xx(outcome)) {
          answered++;
          return;
        }
        await sleep(Math.min(400, 20 * 2 ** attempt));
      }
    };
    const sending = Promise.all(
      Array.from({ length: SENDERS }, async (_, sender) => {
        for (let i = sender; i < deliveries.length; i += SENDERS)
          await deliverUntilAnswered(deliveries[i]!);
      }),
    );

    const restart = async () => {
      const orphan = await postmasterPid();
      expect(orphan, 'the killed server left its PostgreSQL running').toBeDefined();
      server = await startServerProcess(port, env);
      // The new server stopped the one the killed server left behind before starting its own.
      expect(server.stderr()).toContain('stopping an embedded PostgreSQL left running');
      expect(isAlive(orphan!)).toBe(false);
    };

    // Kill 1, while deliveries are inside their transactions: their delivery rows are written
    // and each waits to insert its todo (the test holds a lock on the table for a moment).
    await until(
      'a quarter of the deliveries to be answered',
      () => answered >= deliveries.length / 4,
    );
    const db = await openServerDatabase();
    const holder = await db.reserve();
    await holder`begin`;
    await holder`lock table todos in share mode`;
    let waiting = 0;
    await until('deliveries to wait inside their transactions', async () => {
      [{ waiting }] = await db<[{ waiting: number }]>`
        select count(*)::int as waiting from pg_stat_activity
        where application_name = 'switchboard' and wait_event_type = 'Lock'`;
      return waiting >= SENDERS / 2;
    });
    const killed = await server.stop('SIGKILL');
    expect(killed.code).toBeNull();
    await holder`rollback`;
    holder.release();
    // The transactions left behind get the lock, then find their client gone: each rolls back.
    await until('the killed server’s sessions to end', async () => {
      const [{ left }] = await db<[{ left: number }]>`
        select count(*)::int as left from pg_stat_activity where application_name = 'switchboard'`;
      return left === 0;
    });
    const [{ orphaned }] = await db<[{ orphaned: number }]>`
      select count(*)::int as orphaned from deliveries d
      where d.disposition = 'created' and not exists (select 1 from todos t where t.id = d.todo_id)`;
    expect(orphaned).toBe(0);
    await db.end({ timeout: 1 });
    await restart();

    // Kill 2, wherever the work happens to be.
    await until('60 % to be answered', () => answered >= deliveries.length * 0.6);
    const interruptedBefore = deliveries.filter((d) => d.inFlight).length;
    expect((await server.stop('SIGKILL')).code).toBeNull();
    await restart();

    await sending;

    // Every delivery was answered 2xx in the end, some only after attempts the kills cut short.
    expect(deliveries.every((d) => is2xx(d.attempts.at(-1)!))).toBe(true);
    const retried = deliveries.filter((d) => d.attempts.length > 1);
    expect(retried.length).toBeGreaterThanOrEqual(waiting);
    expect(interruptedBefore).toBeGreaterThan(0);

    const check = await openServerDatabase();
    const ids = deliveries.map((d) => d.id);
    const rows = await check<
      {
        delivery_id: string;
        recorded: number;
        duplicates: number;
        disposition: string | null;
        todo_id: number | null;
        todos: number;
        todo_by_key: number | null;
      }[]
    >`
      select d.id as delivery_id,
             (select count(*)::int from deliveries g
              where g.delivery_id = d.id and g.disposition <> 'duplicate') as recorded,
             (select count(*)::int from deliveries g
              where g.delivery_id = d.id and g.disposition = 'duplicate') as duplicates,
             (select g.disposition from deliveries g
              where g.delivery_id = d.id and g.disposition <> 'duplicate') as disposition,
             (select g.todo_id::int from deliveries g
              where g.delivery_id = d.id and g.disposition <> 'duplicate') as todo_id,
             (select count(*)::int from todos t where t.idempotency_key like 'github:' || d.id || ':%') as todos,
             (select t.id::int from todos t where t.idempotency_key = 'github:' || d.id || ':comment') as todo_by_key
      from unnest(${ids}::text[]) as d(id)`;
    const wrong = rows.filter(
      (row) =>
        row.recorded !== 1 ||
        row.disposition !== 'created' ||
        row.todos !== 1 ||
        row.todo_id === null ||
        row.todo_id !== row.todo_by_key,
    );
    expect(wrong).toEqual([]);

    // No todo twice: as many GitHub todos as deliveries, each comment's text in exactly one.
    const [totals] = await check<[{ todos: number; titles: number; deliveries: number }]>`
      select (select count(*)::int from todos where source = 'github') as todos,
             (select count(distinct title)::int from todos where source = 'github') as titles,
             (select count(*)::int from deliveries where disposition <> 'duplicate') as deliveries`;
    expect(totals).toEqual({
      todos: deliveries.length,
      titles: deliveries.length,
      deliveries: deliveries.length,
    });

    // A delivery that committed but whose answer the kill cut off was retried and recorded as a
    // duplicate receipt that made nothing; each duplicate belongs to a retried delivery.
    const retriedIds = new Set(retried.map((d) => d.id));
    expect(rows.filter((row) => row.duplicates > 0 && !retriedIds.has(row.delivery_id))).toEqual(
      [],
    );
    console.info(
      `server-killed: ${deliveries.length} deliveries, ${retried.length} retried after a kill, ` +
        `${waiting} inside their transactions at the first kill, ` +
        `${rows.filter((row) => row.duplicates > 0).length} committed but unanswered (duplicates on retry)`,
    );

    expect(server.running()).toBe(true);
    const stopped = await server.stop('SIGTERM');
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(existsSync(clusterFile('postmaster.pid'))).toBe(false);
  },
);

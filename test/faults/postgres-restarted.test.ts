import { randomUUID } from 'node:crypto';
import { chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { connect } from '../../src/platform/db/open-database.js';
import { silentLogger } from '../../src/platform/logger.js';
import { createCliHome, type CliHome } from '../cli/support/run-cli.js';
import { readFixture } from '../github/deliver.js';
import { openEventStream } from '../support/event-stream.js';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';
import { startOwnPostgres, type OwnPostgres } from '../support/own-postgres.js';
import {
  readAdminToken,
  startServerProcess,
  type ServerProcess,
} from '../support/server-process.js';

const SECRET = 'fault-test-webhook-secret';
const CLIENTS = 4;
const QUEUE = 'steady';
/** How long PostgreSQL stays down while the clients keep at it. */
const DOWN_MS = 1500;

let home: CliHome;
let database: OwnPostgres;
let server: ServerProcess | undefined;

beforeAll(async () => {
  [home, database] = await Promise.all([createCliHome(), startOwnPostgres()]);
  await chmod(home.dir, 0o755);
});
afterAll(async () => {
  if (server?.running()) await server.stop('SIGKILL');
  await database?.remove();
  await home?.remove();
});

interface Answer {
  status: number | 'no answer';
  body: string;
  started: number;
  ended: number;
}

interface Creation {
  key: string;
  answers: Answer[];
  /** The id of the 2xx answer. */
  id?: number;
}

test(
  'PostgreSQL restarted under load: 503 while down, clean 5xx, back by itself, every todo once and rung',
  { timeout: 120_000 },
  async () => {
    const port = await freePort();
    server = await startServerProcess(port, {
      ...home.env,
      SWITCHBOARD_DATA_DIR: join(home.dir, 'data'),
      DATABASE_URL: database.url,
      WEBHOOK_SECRET: SECRET,
      LOG_LEVEL: 'warn',
    });
    const { url } = server;
    const admin = await readAdminToken(home.env.XDG_CONFIG_HOME!);
    const call = async (method: string, path: string, token: string, body?: unknown) => {
      const started = Date.now();
      try {
        const response = await fetch(`${url}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(20_000),
        });
        return { status: response.status, body: await response.text(), started, ended: Date.now() };
      } catch {
        return { status: 'no answer' as const, body: '', started, ended: Date.now() };
      }
    };
    const health = async () => (await call('GET', '/healthz', '')).status;

    const agent = await call('POST', '/api/v1/agents', admin, { name: 'watcher', queues: [QUEUE] });
    expect(agent.status).toBe(201);
    const stream = await openEventStream(url, JSON.parse(agent.body).token, `?queue=${QUEUE}`);

    // Clients create todos without pause, each with an idempotency key, and retry a refused one
    // with the same key until it is answered 2xx — so a create whose answer was lost cannot
    // make a second todo.
    const creations: Creation[] = [];
    let producing = true;
    const create = async (creation: Creation) => {
      for (let attempt = 0; ; attempt++) {
        const answer = await call('POST', '/api/v1/todos', admin, {
          queue: QUEUE,
          title: `made under restart ${creation.key}`,
          key: creation.key,
        });
        creation.answers.push(answer);
        if (typeof answer.status === 'number' && answer.status < 300) {
          creation.id = JSON.parse(answer.body).todo.id;
          return;
        }
        await sleep(Math.min(200, 10 * 2 ** attempt));
      }
    };
    const clients = Array.from({ length: CLIENTS }, async (_, client) => {
      for (let n = 0; producing; n++) {
        const creation: Creation = { key: `restart-${client}-${n}`, answers: [] };
        creations.push(creation);
        await create(creation);
      }
    });
    const created = () => creations.filter((c) => c.id !== undefined).length;
    for (const started = Date.now(); created() < 20; await sleep(20)) {
      if (Date.now() - started > 30_000) throw new Error('the clients made too few todos');
    }

    await database.stop();
    const stoppedAt = Date.now();
    const down = await call('GET', '/healthz', '');
    expect(down.status).toBe(503);
    expect(JSON.parse(down.body)).toEqual({
      error: 'the database is not answering',
      code: 'unavailable',
    });
    // A GitHub delivery meanwhile is refused, so that GitHub keeps it for redelivery.
    const payload = await readFixture('issue_comment.created.command');
    const delivery = {
      id: randomUUID(),
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issue_comment',
        'x-hub-signature-256': await sign(SECRET, payload),
      },
    };
    const deliver = () =>
      fetch(`${url}/api/github/webhooks`, {
        method: 'POST',
        headers: { ...delivery.headers, 'x-github-delivery': delivery.id },
        body: payload,
      });
    const refused = await deliver();
    expect(refused.status).toBeGreaterThanOrEqual(500);
    expect(await refused.json()).toMatchObject({
      error: expect.stringMatching(/^the delivery .* redeliver it later/),
      code: 'not_recorded',
    });
    await sleep(DOWN_MS - (Date.now() - stoppedAt));

    const startingAt = Date.now();
    await database.start();
    const upAt = Date.now();
    while ((await health()) !== 200) {
      if (Date.now() - upAt > 10_000) throw new Error('health did not come back within 10 s');
      await sleep(50);
    }
    const healthyAfter = Date.now() - upAt;
    // Reconnected by itself, within seconds of PostgreSQL.
    expect(healthyAfter).toBeLessThan(5000);
    const check = connect(database.url, { schema: 'switchboard', max: 2, log: silentLogger });
    try {
      /** What the database and the server's log say about a todo's wake. */
      const diagnose = async (id: number) =>
        JSON.stringify(
          {
            history:
              await check`select action, actor, data, at from todo_events where todo_id = ${id} order by id`,
            rings: await check`select * from todo_rings where todo_id = ${id}`,
            sessions: await check`select id, path, process_id, now() as now from consumer_sessions`,
            // Whether the server listens again, and since when (its LISTEN connection's start).
            listening:
              await check`select backend_start, state, query from pg_stat_activity where query ilike 'listen %'`,
            log: server!.stderr().split('\n').slice(-20),
          },
          null,
          1,
        );

      // A todo committed now rings the consumer that stayed attached throughout: at once if the
      // dispatcher listens again, or by the catch-up read it makes once it does. A second one,
      // committed after that, can only ring through the renewed LISTEN (the timed catch-up is
      // 30 s away).
      for (const key of ['restart-probe-1', 'restart-probe-2']) {
        const probe: Creation = { key, answers: [] };
        creations.push(probe);
        await create(probe);
        await stream
          .waitFor((e) => e.event === 'wake' && e.data.todo_id === probe.id, 5000)
          .catch(async () => {
            throw new Error(
              `no wake for ${key} (#${probe.id}) within 5 s: ${await diagnose(probe.id!)}`,
            );
          });
      }

      await sleep(500);
      producing = false;
      await Promise.all(clients);

      expect((await deliver()).status).toBe(200);

      // Nothing was committed while PostgreSQL was down, and every refusal was clean JSON.
      const answers = creations.flatMap((c) => c.answers);
      const whileDown = answers.filter((a) => a.started >= stoppedAt && a.ended <= startingAt);
      expect(whileDown.length).toBeGreaterThan(0);
      expect(whileDown.filter((a) => a.status !== 'no answer' && a.status < 300)).toEqual([]);
      for (const refusal of answers.filter((a) => a.status === 'no answer' || a.status >= 300)) {
        expect(refusal.status).toBeGreaterThanOrEqual(500);
        expect(Object.keys(JSON.parse(refusal.body)).sort()).toEqual(['code', 'error']);
        expect(refusal.body).not.toMatch(/\n|\bat \S+:\d+|ECONN|postgres/i);
      }

      // Every todo answered 2xx exists exactly once, under the id it was answered with.
      expect(creations.every((c) => c.id !== undefined)).toBe(true);
      const rows = await check<{ idempotency_key: string; id: number }[]>`
        select idempotency_key, id from todos where queue = ${QUEUE}`;
      expect(rows).toHaveLength(creations.length);
      expect(new Map(rows.map((row) => [row.idempotency_key, row.id]))).toEqual(
        new Map(creations.map((c) => [c.key, c.id])),
      );
      // The delivery refused while down was recorded once when it came again.
      const [recorded] = await check<[{ n: number; todos: number }]>`
        select count(*)::int as n, count(todo_id)::int as todos from deliveries
        where delivery_id = ${delivery.id} and disposition <> 'duplicate'`;
      expect(recorded).toEqual({ n: 1, todos: 1 });

      // No wake was lost: every todo rang the consumer — as it was made, or, made while the
      // dispatcher was not listening yet, by the catch-up read after it listened again.
      const ids = creations.map((c) => c.id!);
      const unrung = () => ids.filter((id) => !stream.wakes().some((w) => w.todo_id === id));
      for (const started = Date.now(); unrung().length > 0; await sleep(100)) {
        if (Date.now() - started > 15_000) {
          throw new Error(`no wake for ${unrung().join(', ')}: ${await diagnose(unrung()[0]!)}`);
        }
      }
      console.info(
        `postgres-restarted: ${creations.length} todos, ${whileDown.length} refused while down, ` +
          `healthy ${healthyAfter} ms after PostgreSQL was back`,
      );
    } finally {
      stream.close();
      await check.end({ timeout: 1 });
    }

    // It never crashed, and stops cleanly.
    expect(server.running()).toBe(true);
    const stopped = await server.stop('SIGTERM');
    expect(stopped.code, stopped.stderr).toBe(0);
  },
);

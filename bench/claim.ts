// Claim+complete throughput: the ledger against a bare SKIP LOCKED queue and graphile-worker,
// with the same number of concurrent workers, on the same database, in the same run.
//
//   npm run bench:claim            (BENCH_TODOS=5000, BENCH_DATABASE_URL=… optional)
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  Logger,
  makeWorkerUtils,
  run,
  runMigrations,
  type RunnerOptions,
  type WorkerEvents,
} from 'graphile-worker';
import type postgres from 'postgres';
import { migrate } from '../src/platform/db/migrate.js';
import { connect } from '../src/platform/db/open-database.js';
import {
  actorFor,
  claimNextTodo,
  completeTodo,
  createAgent,
  createHuman,
  systemActor,
} from '../src/data/index.js';
import { silentLogger } from '../src/platform/logger.js';
import type { Benchmark, SummaryRow } from './support/benchmark.js';
import { countFromEnv } from './support/count-from-env.js';
import { formatCount, targetCell } from './support/format-summary-table.js';
import { median } from './support/percentile.js';
import { runIfMain } from './support/run-if-main.js';

const WORKERS = 8;
const ROUNDS = 3;
const WARMUP_TODOS = 200;
const DEFAULT_TODOS = 5000;
const QUEUE = 'bench';
const LEDGER_TARGET_VS_BARE = 0.8;
// Issue 11: the ledger alone ≥ 1.2× graphile-worker in its default configuration.
const LEDGER_TARGET_VS_GRAPHILE = 1.2;

type SystemKey = 'ledger' | 'bare' | 'graphile' | 'graphile_batched';

interface Measurement {
  ms: number;
  /** Anything worth printing with the round's progress line. */
  detail?: string;
}

interface System {
  key: SystemKey;
  label: string;
  /** Sets up `todos` items in `schema` (untimed), times working them all off, checks, drops. */
  measure(url: string, schema: string, todos: number): Promise<Measurement>;
}

export interface ClaimResultRow {
  system: string;
  key: SystemKey;
  /** Todos per second of each timed round, in the order they ran. */
  rounds: number[];
  median: number;
  ratioToBare: number;
}

export interface ClaimResult {
  todos: number;
  workers: number;
  synchronousCommit: string;
  rows: ClaimResultRow[];
  ledgerVsGraphile: number;
  /** The same against graphile-worker with its local queue and batched completions on. */
  ledgerVsGraphileBatched: number;
}

/** Runs the warm-up and the interleaved rounds, and returns the medians. */
export async function runClaimBenchmark(
  url: string,
  options: { todos?: number } = {},
): Promise<ClaimResult> {
  const todos = options.todos ?? countFromEnv('BENCH_TODOS', DEFAULT_TODOS);
  const runId = randomBytes(3).toString('hex');
  const admin = connect(url, { schema: 'public', max: 1, log: silentLogger });
  let synchronousCommit: string;
  try {
    [{ synchronous_commit: synchronousCommit }] = await admin<
      [{ synchronous_commit: string }]
    >`show synchronous_commit`;
  } finally {
    await admin.end({ timeout: 5 });
  }

  const systems: System[] = [ledgerSystem, bareSystem, graphileSystem, graphileBatchedSystem];
  for (const system of systems) {
    await system.measure(
      url,
      `bench_claim_${runId}_${system.key}_warmup`,
      Math.min(WARMUP_TODOS, todos),
    );
  }
  const rates = new Map<SystemKey, number[]>(systems.map((system) => [system.key, []]));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const system of systems) {
      const { ms, detail } = await system.measure(
        url,
        `bench_claim_${runId}_${system.key}_${round}`,
        todos,
      );
      const rate = todos / (ms / 1000);
      rates.get(system.key)!.push(rate);
      progress(
        `round ${round}/${ROUNDS} ${system.label}: ${Math.round(rate)} todos/s ` +
          `(${Math.round(ms)} ms${detail ? `; ${detail}` : ''})`,
      );
    }
  }

  const medianOf = (key: SystemKey) => median(rates.get(key)!);
  const bare = medianOf('bare');
  return {
    todos,
    workers: WORKERS,
    synchronousCommit,
    rows: systems.map((system) => ({
      system: system.label,
      key: system.key,
      rounds: rates.get(system.key)!,
      median: medianOf(system.key),
      ratioToBare: medianOf(system.key) / bare,
    })),
    ledgerVsGraphile: medianOf('ledger') / medianOf('graphile'),
    ledgerVsGraphileBatched: medianOf('ledger') / medianOf('graphile_batched'),
  };
}

/** The printed result: markdown table lines, ready to paste into the README. */
export function formatClaimTable(result: ClaimResult): string {
  const order: SystemKey[] = ['bare', 'ledger', 'graphile', 'graphile_batched'];
  const rows = order.map((key) => result.rows.find((row) => row.key === key)!);
  const verdict = (value: number, target: number) =>
    `${value.toFixed(2)} (target ≥ ${target.toFixed(2)}${value >= target ? '' : ', missed'})`;
  const lines = [
    `synchronous_commit: ${result.synchronousCommit}` +
      (result.synchronousCommit === 'on' ? '' : ' — WARNING: not on, numbers are not comparable'),
    '',
    `claim+complete, ${result.workers} workers, ${result.todos} todos (median of ${ROUNDS})`,
    '',
    '| system | todos/s | ratio to bare |',
    '| --- | ---: | --- |',
    ...rows.map(
      (row) =>
        `| ${row.system} | ${Math.round(row.median)} | ${
          row.key === 'ledger'
            ? verdict(row.ratioToBare, LEDGER_TARGET_VS_BARE)
            : row.ratioToBare.toFixed(2)
        } |`,
    ),
    '',
    `ledger ÷ graphile-worker (defaults): ${verdict(result.ledgerVsGraphile, LEDGER_TARGET_VS_GRAPHILE)}; ` +
      `÷ graphile-worker with localQueue and batched completions: ${result.ledgerVsGraphileBatched.toFixed(2)}`,
    '',
    `rounds (todos/s): ${rows
      .map((row) => `${row.system} ${row.rounds.map((rate) => Math.round(rate)).join(' / ')}`)
      .join('; ')}`,
  ];
  return lines.join('\n');
}

/** The summary table's rows: the ledger against each baseline, with its target. */
export function claimSummaryRows(result: ClaimResult): SummaryRow[] {
  const rate = (key: SystemKey) => result.rows.find((row) => row.key === key)!.median;
  const benchmark = `claim + complete, ${result.workers} workers, ${formatCount(result.todos)} todos`;
  const figure = `ledger ${formatCount(rate('ledger'))} todos/s`;
  const vsBare = rate('ledger') / rate('bare');
  return [
    {
      benchmark: `${benchmark} — vs bare \`SKIP LOCKED\``,
      figure,
      baseline: `bare \`SKIP LOCKED\` ${formatCount(rate('bare'))} todos/s`,
      ratio: vsBare.toFixed(2),
      target: targetCell(`≥ ${LEDGER_TARGET_VS_BARE.toFixed(2)}`, vsBare >= LEDGER_TARGET_VS_BARE),
    },
    {
      benchmark: `${benchmark} — vs graphile-worker`,
      figure,
      baseline: `graphile-worker 0.17 ${formatCount(rate('graphile'))} todos/s`,
      ratio: result.ledgerVsGraphile.toFixed(2),
      target: targetCell(
        `≥ ${LEDGER_TARGET_VS_GRAPHILE.toFixed(2)}`,
        result.ledgerVsGraphile >= LEDGER_TARGET_VS_GRAPHILE,
      ),
    },
    {
      benchmark: `${benchmark} — vs graphile-worker, local queue and batched completions`,
      figure,
      baseline: `graphile-worker 0.17 (localQueue ${WORKERS + 1}, completeJobBatchDelay 0) ${formatCount(rate('graphile_batched'))} todos/s`,
      ratio: result.ledgerVsGraphileBatched.toFixed(2),
      target: '— (for honesty)',
    },
  ];
}

export const claimBenchmark: Benchmark = {
  name: 'claim',
  run: async (url) => {
    const result = await runClaimBenchmark(url);
    return { summary: claimSummaryRows(result), details: formatClaimTable(result) };
  },
};

// (L) The ledger: claimNextTodo → completeTodo, as an agent working queue `bench`.
const ledgerSystem: System = {
  key: 'ledger',
  label: 'ledger',
  async measure(url, schema, todos) {
    const sql = connect(url, { schema, max: WORKERS, log: silentLogger });
    try {
      await migrate(sql, schema);
      const system = systemActor('bench');
      const owner = await createHuman(sql, system, { name: 'bench-owner' });
      const agent = actorFor(
        await createAgent(sql, actorFor(owner, 'cli'), { name: 'bench-agent', queues: [QUEUE] }),
        'mcp',
      );
      // What createTodo would write, in one statement: valid pending todos and their trail.
      await sql`
        with t as (
          insert into todos (queue, kind, title, state, source, attributed_to, available_at)
          select ${QUEUE}, 'manual', 'bench todo ' || g, 'pending', 'cli', ${owner.name}, now()
          from generate_series(1, ${todos}::int) g
          returning id
        )
        insert into todo_events (todo_id, actor_kind, actor, via, action)
        select t.id, ${agent.kind}, ${agent.name}, ${agent.via}, 'created' from t`;
      await sql`vacuum analyze todos, todo_events`;

      const started = performance.now();
      await Promise.all(
        Array.from({ length: WORKERS }, async () => {
          for (;;) {
            const todo = await claimNextTodo(sql, agent, QUEUE);
            if (!todo) return;
            await completeTodo(sql, agent, todo.id, todo.lease_token, { summary: 'ok' });
          }
        }),
      );
      const ms = performance.now() - started;

      // Every todo done exactly once: one claim, one completion each, nothing left over.
      const [check] = await sql<
        [
          {
            todos: number;
            done: number;
            completed: number;
            completed_todos: number;
            claimed: number;
          },
        ]
      >`
        select (select count(*)::int from todos) as todos,
               (select count(*)::int from todos where state = 'done') as done,
               (select count(*)::int from todo_events where action = 'completed') as completed,
               (select count(distinct todo_id)::int from todo_events where action = 'completed') as completed_todos,
               (select count(*)::int from todo_events where action = 'claimed') as claimed`;
      const expected = {
        todos,
        done: todos,
        completed: todos,
        completed_todos: todos,
        claimed: todos,
      };
      assertCounts('ledger', check, expected);
      return { ms };
    } finally {
      await dropSchema(sql, schema);
      await sql.end({ timeout: 5 });
    }
  },
};

// (a) The bare baseline: one UPDATE … SKIP LOCKED to claim, one UPDATE to finish.
const bareSystem: System = {
  key: 'bare',
  label: 'bare SKIP LOCKED',
  async measure(url, schema, todos) {
    const sql = connect(url, { schema, max: WORKERS, log: silentLogger });
    try {
      await sql`create schema ${sql(schema)}`;
      await sql`
        create table ${sql(schema)}.jobs (
          id bigint generated always as identity primary key,
          queue text not null,
          state text not null,
          locked_by text,
          locked_until timestamptz
        ) with (autovacuum_enabled = false)`;
      // The index any real SKIP LOCKED queue has, so that a claim is an index probe rather than a
      // walk past every finished job (the ledger has the same in todos_claimable_idx).
      await sql`create index jobs_pending_idx on ${sql(schema)}.jobs (queue, id) where state = 'pending'`;
      await sql`
        insert into ${sql(schema)}.jobs (queue, state)
        select ${QUEUE}, 'pending' from generate_series(1, ${todos}::int)`;
      // Vacuumed but not analyzed, and kept from autovacuum: statistics saying "every job is
      // pending" (true only before the first claim) make the planner walk jobs_pkey in id order
      // and filter, which passes every finished job on each claim (quadratic: at 5000 jobs a
      // claim reads ~1700 buffers instead of ~25). Without column statistics the planner takes
      // jobs_pending_idx, and keeps it for the whole round.
      await sql`vacuum ${sql(schema)}.jobs`;

      const started = performance.now();
      await Promise.all(
        Array.from({ length: WORKERS }, async (_, index) => {
          const worker = `worker-${index}`;
          for (;;) {
            const [job] = await sql<{ id: number }[]>`
              update jobs set state = 'claimed', locked_by = ${worker},
                              locked_until = now() + interval '300 s'
              where id = (
                select id from jobs where queue = ${QUEUE} and state = 'pending'
                order by id limit 1 for update skip locked
              )
              returning id`;
            if (!job) return;
            await sql`update jobs set state = 'done' where id = ${job.id}`;
          }
        }),
      );
      const ms = performance.now() - started;

      const [check] = await sql<[{ jobs: number; done: number }]>`
        select count(*)::int as jobs, (count(*) filter (where state = 'done'))::int as done
        from jobs`;
      assertCounts('bare', check, { jobs: todos, done: todos });
      return { ms };
    } finally {
      await dropSchema(sql, schema);
      await sql.end({ timeout: 5 });
    }
  },
};

// (b) graphile-worker 0.17: jobs added in one add_jobs call, a no-op task, concurrency 8 — in its
// default configuration, and (c) with its local queue (concurrency + 1, as its docs recommend)
// and batched completions on.
export const graphileSystem: System = graphileWorker('graphile', 'graphile-worker 0.17', {});
const graphileBatchedSystem: System = graphileWorker(
  'graphile_batched',
  'graphile-worker 0.17, localQueue + batched completions',
  { localQueue: { size: WORKERS + 1 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 },
);

function graphileWorker(
  key: SystemKey,
  label: string,
  worker: NonNullable<NonNullable<RunnerOptions['preset']>['worker']>,
): System {
  return {
    key,
    label,
    async measure(url, schema, todos) {
      const sql = connect(url, { schema, max: 1, log: silentLogger });
      const logger = new Logger(() => (level, message) => {
        if (String(level) === 'error') process.stderr.write(`graphile-worker: ${message}\n`);
      });
      const shared = { connectionString: url, schema, logger };
      try {
        // Install its schema before timing (run() would otherwise do it inside the timed part).
        await runMigrations(shared);
        const utils = await makeWorkerUtils(shared);
        try {
          await utils.addJobs(
            Array.from({ length: todos }, () => ({ identifier: 'noop', payload: {} })),
          );
        } finally {
          await utils.release();
        }
        await sql`vacuum analyze ${sql(schema)}._private_jobs`;

        const events = new EventEmitter() as WorkerEvents;
        let succeeded = 0;
        let firstJobAt: number | undefined;
        events.once('job:start', () => (firstJobAt = performance.now()));
        const allSucceeded = new Promise<void>((resolve, reject) => {
          events.on('job:success', () => {
            if (++succeeded === todos) resolve();
          });
          events.on('job:error', ({ error }) =>
            reject(error instanceof Error ? error : new Error(String(error))),
          );
        });
        const options: RunnerOptions = {
          ...shared,
          concurrency: WORKERS,
          // Its documented recommendation: 10 or concurrency + 2, whichever is larger.
          maxPoolSize: Math.max(10, WORKERS + 2),
          noHandleSignals: true,
          events,
          taskList: { noop: async () => {} },
          preset: { worker },
        };

        const started = performance.now();
        const runner = await run(options);
        let ms: number;
        try {
          await withTimeout(allSucceeded, 120_000 + todos * 20, 'graphile-worker jobs to succeed');
          // job:success fires before the job's row is deleted (completion is written after the
          // event, without being awaited): done means the jobs table is empty.
          while (
            (await sql<[{ left: number }]>`select count(*)::int as left from _private_jobs`)[0]
              .left > 0
          ) {
            await sleep(2);
          }
          ms = performance.now() - started;
        } finally {
          await runner.stop();
        }
        assertCounts('graphile-worker', { succeeded }, { succeeded: todos });
        return {
          ms,
          detail: `first job started ${Math.round(firstJobAt! - started)} ms after run()`,
        };
      } finally {
        await dropSchema(sql, schema);
        await sql.end({ timeout: 5 });
      }
    },
  };
}

async function dropSchema(sql: postgres.Sql, schema: string): Promise<void> {
  await sql`drop schema if exists ${sql(schema)} cascade`;
}

function assertCounts(
  what: string,
  actual: Record<string, number>,
  expected: Record<string, number>,
): void {
  for (const [name, value] of Object.entries(expected)) {
    if (actual[name] !== value) {
      throw new Error(
        `${what}: expected ${name} = ${value}, got ${actual[name]} (${JSON.stringify(actual)})`,
      );
    }
  }
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  const controller = new AbortController();
  try {
    return await Promise.race([
      promise,
      sleep(ms, undefined, { signal: controller.signal }).then(() => {
        throw new Error(`timed out after ${ms} ms waiting for ${what}`);
      }),
    ]);
  } finally {
    controller.abort();
  }
}

function progress(message: string): void {
  process.stderr.write(`claim: ${message}\n`);
}

runIfMain(import.meta.url, claimBenchmark);

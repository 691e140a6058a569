// Growth: does the ledger stay flat as it fills? Two ledgers side by side on one database — 10³
// todos and 10⁶ (10⁷ with BENCH_GROWTH_LARGE=1) — each with 30 days of history, bulk-loaded in
// the ledger's own shape into a scratch schema in a few statements (generate_series, triggers and
// foreign-key checks off for the load, as a restore would). Then the paths that must not slow
// down are timed on both, interleaved, one at a time: claim + complete, a list page, a todo with
// its history, a signed delivery POSTed to a real server on each schema, and the sweeper's pass
// that every process runs every few seconds. Every figure is the
// big ledger's p50 ÷ the small one's, measured in the same run.
//
//   npm run bench:growth           (BENCH_GROWTH_TODOS=1000000, BENCH_GROWTH_LARGE=1 for 10⁷,
//                                   BENCH_GROWTH_OPS=300, BENCH_DATABASE_URL=… optional;
//                                   BENCH_GROWTH_STATISTICS=empty: the statistics of empty tables)
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sign } from '@octokit/webhooks-methods';
import type postgres from 'postgres';
import { migrate } from '../src/platform/db/migrate.js';
import { connect } from '../src/platform/db/open-database.js';
import {
  actorFor,
  claimNextTodo,
  completeTodo,
  createAgent,
  createHuman,
  getTodoWithHistory,
  listTodos,
  sweepTodos,
  systemActor,
  type Actor,
} from '../src/data/index.js';
import { silentLogger } from '../src/platform/logger.js';
import type { RunningServer } from '../src/server/start-server.js';
import type { Benchmark, SummaryRow } from './support/benchmark.js';
import { countFromEnv } from './support/count-from-env.js';
import { formatCount, targetCell } from './support/format-summary-table.js';
import { describeLoad, machineLoad } from './support/machine-load.js';
import { distribution, type Distribution } from './support/percentile.js';
import { runIfMain } from './support/run-if-main.js';
import { startBenchServer } from './support/start-bench-server.js';

const SMALL = 1_000;
const DEFAULT_LARGE = 1_000_000;
const HUGE = 10_000_000;
const DEFAULT_OPS = 300;
const WARMUP_OPS = 30;
/** Issue 25: each path at the big size ≤ 1.3× its cost at 10³. */
const TARGET = 1.3;
const QUEUES = 20;
/** History spans just inside the default retention (30 days), so the pruner keeps all of it. */
const HISTORY_DAYS = 29.9;
/** Of the loaded todos, the oldest this share are done; the newest are pending. */
const DONE_SHARE = 0.9;
const SECRET = 'bench-webhook-secret';
const FIXTURE = new URL(
  '../test/fixtures/github/issue_comment.created.command.json',
  import.meta.url,
);

type OpKey = 'claim' | 'list' | 'get' | 'delivery' | 'sweep';
const OPS: OpKey[] = ['claim', 'list', 'get', 'delivery', 'sweep'];
const OP_LABELS: Record<OpKey, string> = {
  claim: '`claim_next` + `complete` (ledger calls)',
  list: 'a page of 50 open todos (`listTodos`)',
  get: 'a todo with its history (`getTodoWithHistory`, random id)',
  delivery: 'a signed GitHub delivery POSTed → 200 (committed, todo made)',
  sweep: "the sweeper's pass (`sweepTodos`: ended leases, due retries, expired approvals)",
};

interface Ledger {
  todos: number;
  schema: string;
  sql: postgres.Sql;
  human: Actor;
  agent: Actor;
  server: RunningServer;
  dir: string;
  loadSeconds: number;
  rows: Record<string, number>;
  /** The five tables with their indexes, on disk. */
  bytes: number;
}

export interface GrowthResult {
  sizes: [number, number];
  ops: number;
  load: [number, number];
  loadSeconds: [number, number];
  rows: Record<string, number>;
  /** The big ledger's tables and indexes on disk. */
  bytes: number;
  statistics: Statistics;
  paths: { key: OpKey; label: string; small: Distribution; large: Distribution; ratio: number }[];
}

/**
 * The ledgers' statistics: `fresh` from an ANALYZE after the load; `empty` from one before it
 * (autovacuum off), so the planner knows each table's size but nothing of what is in it — a
 * deployment whose ledger grew faster than autovacuum analysed it.
 */
export type Statistics = 'fresh' | 'empty';

export async function runGrowthBenchmark(
  url: string,
  options: { large?: number; ops?: number; statistics?: Statistics } = {},
): Promise<GrowthResult> {
  const large =
    options.large ??
    (process.env.BENCH_GROWTH_LARGE === '1'
      ? HUGE
      : countFromEnv('BENCH_GROWTH_TODOS', DEFAULT_LARGE));
  const ops = options.ops ?? countFromEnv('BENCH_GROWTH_OPS', DEFAULT_OPS);
  const statistics =
    options.statistics ?? (process.env.BENCH_GROWTH_STATISTICS === 'empty' ? 'empty' : 'fresh');
  const runId = randomBytes(3).toString('hex');
  const loadAtStart = machineLoad();
  const ledgers: Ledger[] = [];
  try {
    for (const todos of [SMALL, large]) {
      ledgers.push(await buildLedger(url, `bench_growth_${runId}_${todos}`, todos, statistics));
    }
    const [small, big] = ledgers as [Ledger, Ledger];
    const payload = await readFile(FIXTURE, 'utf8');
    const senders = new Map(ledgers.map((l) => [l, sender(l.server.url, payload)]));
    // The claims take what is waiting on q00, oldest first, as an agent would: the loaded
    // ledger's old pending todos, then these. Enough for every claim at both sizes.
    for (const ledger of ledgers) await addPending(ledger, ops + WARMUP_OPS);

    const run: Record<OpKey, (ledger: Ledger, i: number) => Promise<void>> = {
      async claim(ledger) {
        const todo = await claimNextTodo(ledger.sql, ledger.agent, 'q00');
        if (!todo) throw new Error(`growth: nothing to claim at ${ledger.todos}`);
        await completeTodo(ledger.sql, ledger.agent, todo.id, todo.lease_token, { summary: 'ok' });
      },
      // Everyone's open todos, newest first (the console's first page): a full page at both
      // sizes, so that both do the same work.
      async list(ledger) {
        const page = await listTodos(ledger.sql, ledger.human, { limit: 50 });
        if (page.length < 50) throw new Error(`growth: a short page at ${ledger.todos}`);
      },
      async get(ledger) {
        const id = 1 + Math.floor(Math.random() * ledger.todos);
        const { history } = await getTodoWithHistory(ledger.sql, ledger.human, id);
        if (history.length === 0) throw new Error(`growth: todo ${id} has no history`);
      },
      async delivery(ledger) {
        await senders.get(ledger)!();
      },
      // Every process runs it every 5 s: it must cost what is in flight, not what was ever done.
      async sweep(ledger) {
        await sweepTodos(ledger.sql);
      },
    };
    const samples = new Map<string, number[]>();
    for (let i = 0; i < WARMUP_OPS + ops; i++) {
      for (const key of OPS) {
        // Alternating which size goes first, so that neither always follows the other.
        const order = i % 2 === 0 ? [small, big] : [big, small];
        for (const ledger of order) {
          const begun = performance.now();
          await run[key](ledger, i);
          const ms = performance.now() - begun;
          if (i >= WARMUP_OPS) {
            const name = `${key}:${ledger.todos}`;
            samples.set(name, [...(samples.get(name) ?? []), ms]);
          }
        }
      }
      if ((i + 1 - WARMUP_OPS) % 100 === 0) progress(`${i + 1 - WARMUP_OPS}/${ops} of each`);
    }
    return {
      sizes: [SMALL, large],
      ops,
      load: [loadAtStart, machineLoad()],
      loadSeconds: [small.loadSeconds, big.loadSeconds],
      rows: big.rows,
      bytes: big.bytes,
      statistics,
      paths: OPS.map((key) => {
        const s = distribution(samples.get(`${key}:${SMALL}`)!);
        const l = distribution(samples.get(`${key}:${large}`)!);
        return { key, label: OP_LABELS[key], small: s, large: l, ratio: l.p50 / s.p50 };
      }),
    };
  } finally {
    for (const ledger of ledgers) {
      await ledger.server.close().catch(() => {});
      await ledger.sql`drop schema if exists ${ledger.sql(ledger.schema)} cascade`.catch(() => {});
      await ledger.sql.end({ timeout: 5 });
      await rm(ledger.dir, { recursive: true, force: true });
    }
  }
}

/**
 * A ledger of `todos` todos on `schema`, as 30 days of use would leave it: the oldest 90 % done
 * (created, claimed, completed: three history rows each), the newest 10 % pending (one history
 * row and the ring row a rung todo has); one in two from a GitHub delivery (its delivery row and
 * its 👀 write-back, sent), and as many deliveries again that made nothing (no rule matched).
 * Then a server on it.
 */
async function buildLedger(
  url: string,
  schema: string,
  todos: number,
  statistics: Statistics,
): Promise<Ledger> {
  const sql = connect(url, { schema, max: 4, log: silentLogger });
  const started = performance.now();
  await migrate(sql, schema);
  const tables = ['todos', 'todo_events', 'deliveries', 'outbox', 'todo_rings'];
  if (statistics === 'empty') {
    for (const table of tables) {
      await sql`alter table ${sql(table)} set (autovacuum_enabled = off)`;
      await sql`analyze ${sql(table)}`;
    }
  }
  const owner = await createHuman(sql, systemActor('bench'), {
    name: 'bench-owner',
    is_admin: true,
  });
  const human = actorFor(owner, 'cli');
  const queues = Array.from({ length: QUEUES }, (_, q) => `q${String(q).padStart(2, '0')}`);
  const agent = actorFor(
    await createAgent(sql, human, { name: 'bench-agent', queues: [...queues, 'issues'] }),
    'mcp',
  );
  const done = Math.floor(todos * DONE_SHARE);
  const seconds = HISTORY_DAYS * 86_400;
  progress(`loading ${formatCount(todos)} todos into ${schema}…`);
  await sql.begin(async (tx) => {
    // Triggers (wakes) and foreign-key checks off for the load: every row is made consistent.
    await tx`set local session_replication_role = replica`;
    await tx`set local maintenance_work_mem = '256MB'`;
    // Indexes that back no constraint are dropped for the load and built again after it, by
    // sorting rather than one random insert per row (random delivery ids, above all).
    const indexes = await tx<{ name: string; definition: string }[]>`
      select i.indexname as name, i.indexdef as definition from pg_indexes i
      where i.schemaname = ${schema}
        and i.tablename in ('todos', 'todo_events', 'deliveries', 'outbox', 'todo_rings')
        and not exists (
          select 1 from pg_constraint c
          where c.conindid = format('%I.%I', i.schemaname, i.indexname)::regclass)`;
    for (const { name } of indexes) await tx`drop index ${tx(name)}`;
    // Todo g was made at ts(g): evenly over the last 30 days, oldest first; ids follow time.
    const ts = tx.unsafe(`now() - make_interval(secs => ${seconds} * (1 - g::float8 / ${todos}))`);
    await tx`
      insert into todos (id, queue, kind, title, body, state, source, url, attributed_to,
                         available_at, claimed_by, attempt, summary, meta, created_at, updated_at)
      overriding system value
      select g, 'q' || lpad((g % ${QUEUES})::text, 2, '0'),
             case when g % 2 = 0 then 'github.issue_comment' else 'manual' end,
             'Bench todo ' || g, 'Some words of body for todo ' || g || ': ' || md5(g::text),
             (case when g <= ${done} then 'done' else 'pending' end)::todo_state,
             case when g % 2 = 0 then 'github' else 'cli' end,
             case when g % 2 = 0 then 'https://github.com/octo/repo/issues/' || g end,
             case when g % 2 = 0 then 'octocat' else 'bench-owner' end,
             case when g <= ${done} then null else ${ts} end,
             case when g <= ${done} then 'bench-agent' end,
             case when g <= ${done} then 1 else 0 end,
             case when g <= ${done} then 'ok' end,
             case when g % 2 = 0
               then jsonb_build_object('repository', 'octo/repo', 'issue_number', g, 'installation_id', 1)
               else '{}'::jsonb end,
             ${ts}, ${ts} + case when g <= ${done} then interval '5 minutes' else interval '0' end
      from generate_series(1, ${todos}::int) g`;
    await tx`select setval(pg_get_serial_sequence('todos', 'id'), ${todos})`;
    await tx`
      insert into todo_events (todo_id, at, actor_kind, actor, via, action, data)
      select g, ${ts} + step.after, step.actor_kind::actor_kind, step.actor, step.via, step.action,
             step.data
      from generate_series(1, ${todos}::int) g
      cross join lateral (values
        (interval '0', case when g % 2 = 0 then 'system' else 'human' end,
         case when g % 2 = 0 then 'github' else 'bench-owner' end,
         case when g % 2 = 0 then 'github' else 'cli' end, 'created', null::jsonb),
        (interval '1 minute', 'agent', 'bench-agent', 'mcp', 'claimed', null),
        (interval '5 minutes', 'agent', 'bench-agent', 'mcp', 'completed', '{"summary": "ok"}'::jsonb)
      ) as step(after, actor_kind, actor, via, action, data)
      where step.action = 'created' or g <= ${done}
      order by g`;
    await tx`
      insert into deliveries (source, kind, delivery_id, event, action, subject, actor,
                              installation_id, disposition, todo_id, facts, body_sha256, received_at)
      select 'github', 'github', md5('delivery ' || g), 'issue_comment', 'created', 'octo/repo',
             'octocat', 1,
             (case when g % 2 = 0 then 'created' else 'no_rule' end)::delivery_disposition,
             case when g % 2 = 0 then g end, '{}'::jsonb, sha256(('body ' || g)::bytea), ${ts}
      from generate_series(1, ${todos}::int) g
      order by g`;
    await tx`
      insert into outbox (todo_id, source, kind, write_back, target, body, state, attempts,
                          next_attempt_at, created_at, sent_at)
      select g, 'github', 'github', 'reaction',
             jsonb_build_object('installation_id', 1, 'owner', 'octo', 'repo', 'repo', 'issue_number', g),
             'eyes', 'sent', 1, ${ts}, ${ts}, ${ts}
      from generate_series(2, ${todos}::int, 2) g`;
    await tx`
      insert into todo_rings (todo_id, rings, next_ring_at)
      select g, 1, now() + make_interval(secs => 60 + g % 3600)
      from generate_series(${done + 1}::int, ${todos}::int) g`;
    for (const { definition } of indexes) await tx.unsafe(definition);
  });
  if (statistics === 'fresh')
    await sql`vacuum analyze todos, todo_events, deliveries, outbox, todo_rings`;
  const loadSeconds = (performance.now() - started) / 1000;
  const rows: Record<string, number> = {};
  let bytes = 0;
  for (const table of tables) {
    const [{ n, size }] = await sql<[{ n: number; size: string }]>`
      select (select count(*) from ${sql(table)})::int as n,
             pg_total_relation_size(${`${schema}.${table}`}::regclass)::text as size`;
    rows[table] = n;
    bytes += Number(size);
  }
  progress(`${schema}: ${loadSeconds.toFixed(0)} s (${JSON.stringify(rows)})`);
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-bench-growth-'));
  const server = await startBenchServer({ url, schema, dir, webhookSecret: SECRET });
  return { todos, schema, sql, human, agent, server, dir, loadSeconds, rows, bytes };
}

/** `count` fresh pending todos on q00 (with their history and ring rows), for the claims. */
async function addPending(ledger: Ledger, count: number): Promise<void> {
  await ledger.sql.begin(async (tx) => {
    await tx`set local session_replication_role = replica`;
    await tx`
      with t as (
        insert into todos (queue, kind, title, state, source, attributed_to, available_at)
        select 'q00', 'manual', 'claim me ' || g, 'pending', 'cli', 'bench-owner', now()
        from generate_series(1, ${count}::int) g
        returning id
      ), r as (
        insert into todo_rings (todo_id, rings, next_ring_at)
        select id, 1, now() + interval '1 hour' from t
      )
      insert into todo_events (todo_id, actor_kind, actor, via, action)
      select id, 'human', 'bench-owner', 'cli', 'created' from t`;
  });
}

/** POSTs one signed `/switchboard` comment, a new comment each time, and insists on a 200. */
function sender(url: string, fixture: string): () => Promise<void> {
  const template = JSON.parse(fixture) as { comment: { id: number } };
  let next = 0;
  return async () => {
    template.comment.id = 2_000_000_000 + next++;
    const payload = JSON.stringify(template);
    const response = await fetch(`${url}/api/github/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issue_comment',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': await sign(SECRET, payload),
      },
      body: payload,
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`delivery answered ${response.status}: ${text}`);
  };
}

export function formatGrowthTable(result: GrowthResult): string {
  const ms = (value: number) => value.toFixed(2);
  const [small, large] = result.sizes;
  return [
    `${formatCount(small)} todos beside ${formatCount(large)} (30 days of history; loaded in ` +
      `${result.loadSeconds[0].toFixed(0)} s and ${result.loadSeconds[1].toFixed(0)} s); ` +
      `${result.ops} of each, one at a time, sizes interleaved` +
      (result.statistics === 'empty'
        ? '; statistics from before the load (ANALYZE of the empty tables, autovacuum off)'
        : ''),
    '',
    `rows at ${formatCount(large)}: ${Object.entries(result.rows)
      .map(([table, n]) => `${table} ${formatCount(n)}`)
      .join(', ')}; on disk with their indexes ${formatCount(result.bytes / 2 ** 20)} MiB, ` +
      `${formatCount(result.bytes / large)} bytes per todo`,
    '',
    `| path | p50 / p99 ms at ${formatCount(small)} | p50 / p99 ms at ${formatCount(large)} | p50 ratio |`,
    '| --- | ---: | ---: | ---: |',
    ...result.paths.map(
      (p) =>
        `| ${p.label} | ${ms(p.small.p50)} / ${ms(p.small.p99)} | ${ms(p.large.p50)} / ${ms(p.large.p99)} | ${p.ratio.toFixed(2)} |`,
    ),
    describeLoad(...result.load),
  ].join('\n');
}

export function growthSummaryRows(result: GrowthResult): SummaryRow[] {
  const [small, large] = result.sizes;
  return result.paths.map((p) => ({
    benchmark: `growth: ${p.label}, ${formatCount(large)} todos (30 days${result.statistics === 'empty' ? ', statistics of the empty ledger' : ''})`,
    figure: `p50 ${p.large.p50.toFixed(2)} ms, p99 ${p.large.p99.toFixed(2)} ms`,
    baseline: `the same at ${formatCount(small)} todos, p50 ${p.small.p50.toFixed(2)} ms`,
    ratio: p.ratio.toFixed(2),
    target: targetCell(`≤ ${TARGET}×`, p.ratio <= TARGET),
  }));
}

export const growthBenchmark: Benchmark = {
  name: 'growth',
  run: async (url) => {
    const result = await runGrowthBenchmark(url);
    return { summary: growthSummaryRows(result), details: formatGrowthTable(result) };
  },
};

function progress(message: string): void {
  process.stderr.write(`growth: ${message}\n`);
}

runIfMain(import.meta.url, growthBenchmark);

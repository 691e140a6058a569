// Ingestion throughput: signed GitHub deliveries accepted durably over HTTP by a real server,
// next to the same deliveries taken by a bare Probot app writing the same rows with the same
// guarantees (bench/support/bare-probot-app-same-rows.ts: one statement per delivery), by a bare
// Probot app writing minimal rows (bench/support/bare-probot-app.ts: one statement records the
// delivery and makes its todo), each in a process of its own like the server, and to the raw
// single-row insert rate of the same database, in the same run.
//
//   npm run bench:ingest           (BENCH_DELIVERIES=2000, BENCH_DATABASE_URL=… optional)
import { randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { sign } from '@octokit/webhooks-methods';
import type postgres from 'postgres';
import { connect } from '../src/platform/db/open-database.js';
import { silentLogger } from '../src/platform/logger.js';
import type { Benchmark, SummaryRow } from './support/benchmark.js';
import { countFromEnv } from './support/count-from-env.js';
import { cpuCells, cpuPerUnit, startCpuSplit, type CpuSplit } from './support/cpu-split.js';
import { formatCount, targetCell } from './support/format-summary-table.js';
import { median, percentile } from './support/percentile.js';
import { createBareIntakeTables } from './support/bare-probot-app.js';
import { createSameRowsIntakeTables } from './support/bare-probot-app-same-rows.js';
import { describeLoad, loadNote, machineLoad } from './support/machine-load.js';
import { runIfMain } from './support/run-if-main.js';
import { spawnBareProcess } from './support/spawn-bare-process.js';
import { spawnServerProcess } from './support/spawn-server-process.js';

const SENDERS = 16;
const ROUNDS = 3;
const WARMUP_DELIVERIES = 200;
const DEFAULT_DELIVERIES = 2000;
const SECRET = 'bench-webhook-secret';
/** A `/switchboard` command comment: every delivery is routed, trusted and makes a todo. */
const FIXTURE = new URL(
  '../test/fixtures/github/issue_comment.created.command.json',
  import.meta.url,
);

type SystemKey = 'ingest' | 'same_rows' | 'probot' | 'insert' | 'transaction';
const SYSTEMS = ['ingest', 'same_rows', 'probot', 'insert', 'transaction'] as const;
/**
 * The benchmark's server has no GitHub App credentials, so switchboard queues no 👀 write-back
 * here: the same-rows reference writes none either (the run checks that both wrote the same rows).
 */
const WRITE_BACK = false;

interface Round {
  ms: number;
  /** Each request's (or statement's) time, in ms. */
  latencies: number[];
}

export interface IngestResultRow {
  key: SystemKey;
  system: string;
  /** Per second, in each timed round. */
  rounds: number[];
  median: number;
  p50: number;
  p99: number;
  /** CPU time per delivery, median of the rounds (null off Linux). */
  cpu: CpuSplit | null;
}

export interface IngestResult {
  deliveries: number;
  senders: number;
  synchronousCommit: string;
  rows: IngestResultRow[];
  /** The 1-minute load average when the run started and ended. */
  load: [number, number];
  /** Median ingestion rate ÷ median insert rate. */
  ratio: number;
}

/**
 * Starts a server in a process of its own, on its own schema (no App credentials: nothing calls
 * GitHub), as in production, where the senders are elsewhere; and, round by round, has 16 senders post `deliveries` signed deliveries and 16 connections insert as many
 * comparable rows, one statement and one commit each.
 */
export async function runIngestBenchmark(
  url: string,
  options: { deliveries?: number } = {},
): Promise<IngestResult> {
  const deliveries = options.deliveries ?? countFromEnv('BENCH_DELIVERIES', DEFAULT_DELIVERIES);
  const runId = randomBytes(3).toString('hex');
  const serverSchema = `bench_ingest_${runId}`;
  const insertSchema = `bench_insert_${runId}`;
  const probotSchema = `bench_probot_${runId}`;
  const sameSchema = `bench_probot_same_${runId}`;
  const loadAtStart = machineLoad();
  const server = await spawnServerProcess(url, serverSchema, { webhookSecret: SECRET });
  const serverSql = connect(url, { schema: serverSchema, max: 1, log: silentLogger });
  const sql = connect(url, { schema: insertSchema, max: SENDERS, log: silentLogger });
  await createBareIntakeTables(serverSql, probotSchema);
  await createSameRowsIntakeTables(serverSql, sameSchema);
  const probot = await spawnBareProcess('probot', url, probotSchema, { secret: SECRET });
  const sameRows = await spawnBareProcess('probot-same-rows', url, sameSchema, {
    secret: SECRET,
    writeBack: WRITE_BACK,
  });
  try {
    const [{ synchronous_commit: synchronousCommit }] = await sql<
      [{ synchronous_commit: string }]
    >`show synchronous_commit`;
    await createInsertTable(sql, insertSchema);
    const payload = await readFile(FIXTURE, 'utf8');
    const send = sender(server.url, payload);
    const sendToProbot = sender(probot.url, payload);
    const sendToSameRows = sender(sameRows.url, payload);
    const insert = inserter(sql, payload);
    const transaction = transactor(sql, payload);

    const warmup = Math.min(WARMUP_DELIVERIES, deliveries);
    await runSenders(warmup, send);
    await runSenders(warmup, sendToProbot);
    await runSenders(warmup, sendToSameRows);
    await runSenders(warmup, insert);
    await runSenders(warmup, transaction);
    const rounds: Record<SystemKey, Round[]> = {
      ingest: [],
      same_rows: [],
      probot: [],
      insert: [],
      transaction: [],
    };
    const cpu: Record<SystemKey, CpuSplit[]> = {
      ingest: [],
      same_rows: [],
      probot: [],
      insert: [],
      transaction: [],
    };
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [key, work, serverPid] of [
        ['ingest', send, server.pid],
        ['same_rows', sendToSameRows, sameRows.pid],
        ['probot', sendToProbot, probot.pid],
        ['insert', insert, null],
        ['transaction', transaction, null],
      ] as const) {
        const cpuSince = startCpuSplit(serverPid);
        const measured = await runSenders(deliveries, work);
        if (cpuSince) cpu[key].push(cpuSince());
        rounds[key].push(measured);
        progress(
          `round ${round}/${ROUNDS} ${key}: ${Math.round(deliveries / (measured.ms / 1000))}/s`,
        );
      }
    }

    // Durably accepted means committed: every delivery recorded once, with its todo.
    const total = warmup + ROUNDS * deliveries;
    const [check] = await serverSql<[{ deliveries: number; created: number; todos: number }]>`
      select (select count(*)::int from deliveries) as deliveries,
             (select count(*)::int from deliveries where disposition = 'created') as created,
             (select count(*)::int from todos where source = 'github') as todos`;
    for (const [name, value] of Object.entries(check)) {
      if (value !== total) throw new Error(`ingest: expected ${name} = ${total}, got ${value}`);
    }

    const [probotCheck] = await serverSql<[{ deliveries: number; todos: number }]>`
      select (select count(*)::int from ${serverSql(probotSchema)}.deliveries) as deliveries,
             (select count(*)::int from ${serverSql(probotSchema)}.todos) as todos`;
    for (const [name, value] of Object.entries(probotCheck)) {
      if (value !== total) throw new Error(`probot: expected ${name} = ${total}, got ${value}`);
    }

    await checkSameRows(serverSql, sameSchema, total);

    const rows = SYSTEMS.map((key) => summarise(key, rounds[key], deliveries, cpu[key]));
    const rate = (key: SystemKey) => rows.find((row) => row.key === key)!.median;
    return {
      deliveries,
      senders: SENDERS,
      synchronousCommit,
      rows,
      load: [loadAtStart, machineLoad()],
      ratio: rate('ingest') / rate('insert'),
    };
  } finally {
    await probot.close();
    await sameRows.close();
    await sql`drop schema if exists ${sql(sameSchema)} cascade`.catch(() => {});
    await sql`drop schema if exists ${sql(probotSchema)} cascade`.catch(() => {});
    await sql`drop schema if exists ${sql(insertSchema)} cascade`.catch(() => {});
    await sql.end({ timeout: 5 });
    await server.stop();
    await serverSql`drop schema if exists ${serverSql(serverSchema)} cascade`.catch(() => {});
    await serverSql.end({ timeout: 5 });
  }
}

/**
 * The same rows on both sides: the reference recorded every delivery once, each with its todo
 * and its history row, and queued as many write-backs as switchboard did (on `sql`'s schema).
 */
async function checkSameRows(sql: postgres.Sql, schema: string, total: number): Promise<void> {
  const s = sql(schema);
  const [check] = await sql<
    [{ deliveries: number; todos: number; history: number; outbox: number; switchboard: number }]
  >`
    select (select count(*)::int from ${s}.deliveries where todo_id is not null) as deliveries,
           (select count(*)::int from ${s}.todos) as todos,
           (select count(*)::int from ${s}.todo_events where action = 'created') as history,
           (select count(*)::int from ${s}.outbox) as outbox,
           (select count(*)::int from outbox) as switchboard`;
  const { outbox, switchboard, ...made } = check;
  for (const [name, value] of Object.entries(made)) {
    if (value !== total) throw new Error(`same rows: expected ${name} = ${total}, got ${value}`);
  }
  if (outbox !== switchboard)
    throw new Error(`same rows: ${outbox} write-backs queued, switchboard queued ${switchboard}`);
}

function rowsByKey(result: IngestResult): Record<SystemKey, IngestResultRow> {
  return Object.fromEntries(result.rows.map((row) => [row.key, row])) as Record<
    SystemKey,
    IngestResultRow
  >;
}

/** The printed result: markdown table lines, ready to paste into the README. */
export function formatIngestTable(result: IngestResult): string {
  const { ingest, same_rows: sameRows, probot, insert, transaction } = rowsByKey(result);
  const ms = (value: number) => value.toFixed(1);
  return [
    `synchronous_commit: ${result.synchronousCommit}` +
      (result.synchronousCommit === 'on' ? '' : ' — WARNING: not on, numbers are not comparable'),
    '',
    `${result.senders} concurrent senders, ${result.deliveries} per round (median of ${ROUNDS})`,
    '',
    '| what | per second | p50 ms | p99 ms | ratio to insert |',
    '| --- | ---: | ---: | ---: | ---: |',
    `| signed deliveries over HTTP, committed | ${Math.round(ingest.median)} | ${ms(ingest.p50)} | ${ms(ingest.p99)} | ${result.ratio.toFixed(2)} |`,
    `| the same deliveries, bare Probot app writing the same rows (one statement: delivery with facts and body hash, replay window, todo with its key, history, wake) | ${Math.round(sameRows.median)} | ${ms(sameRows.p50)} | ${ms(sameRows.p99)} | ${(sameRows.median / insert.median).toFixed(2)} |`,
    `| the same deliveries, bare Probot app (one statement: delivery and todo) | ${Math.round(probot.median)} | ${ms(probot.p50)} | ${ms(probot.p99)} | ${(probot.median / insert.median).toFixed(2)} |`,
    `| bare single-row INSERT | ${Math.round(insert.median)} | ${ms(insert.p50)} | ${ms(insert.p99)} | 1.00 |`,
    `| the same rows as a delivery writes them: one transaction of ${TRANSACTION_STATEMENTS} statements | ${Math.round(transaction.median)} | ${ms(transaction.p50)} | ${ms(transaction.p99)} | ${(transaction.median / insert.median).toFixed(2)} |`,
    '',
    `signed deliveries ÷ the same rows, bare: ${(ingest.median / sameRows.median).toFixed(2)} ` +
      `(p99 ${(ingest.p99 / sameRows.p99).toFixed(2)}×); ÷ bare Probot app: ${(ingest.median / probot.median).toFixed(2)}`,
    '',
    'CPU time per delivery (ms; median of the rounds, from /proc): the server process, this process (the senders), PostgreSQL, the whole machine',
    '',
    '| what | server | senders | PostgreSQL | machine |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...result.rows.map((row) => `| ${row.system} | ${cpuCells(row.cpu)} |`),
    '',
    describeLoad(...result.load),
    '',
    `rounds (per second): ${result.rows
      .map((row) => `${row.key} ${row.rounds.map((rate) => Math.round(rate)).join(' / ')}`)
      .join('; ')}`,
  ].join('\n');
}

/** Signed ingestion with 16 senders ≥ 0.3× the single-row INSERT, p99 ≤ 50 ms. */
const RATIO_TARGET = 0.3;
const P99_TARGET_MS = 50;
/** ≥ 0.8× the bare Probot app writing the same rows, with a p99 at most 1.3× that app's. */
const SAME_ROWS_RATIO_TARGET = 0.8;
const SAME_ROWS_P99_TARGET = 1.3;

/** The summary table's rows: committed deliveries against each reference. */
export function ingestSummaryRows(result: IngestResult): SummaryRow[] {
  const { ingest, same_rows: sameRows, probot, insert, transaction } = rowsByKey(result);
  const vsProbot = ingest.median / probot.median;
  const vsSameRows = ingest.median / sameRows.median;
  const p99Ratio = ingest.p99 / sameRows.p99;
  return [
    {
      benchmark: `GitHub ingestion, ${result.senders} senders — switchboard vs same-rows reference`,
      figure:
        `${formatCount(ingest.median)} signed deliveries/s committed, ` +
        `p50 ${ingest.p50.toFixed(1)} ms, p99 ${ingest.p99.toFixed(1)} ms (${loadNote(...result.load)})`,
      baseline:
        `bare Probot app writing the same rows (one statement: delivery with facts and body hash, ` +
        `replay window, todo with its key, history, wake) ${formatCount(sameRows.median)}/s, ` +
        `p99 ${sameRows.p99.toFixed(1)} ms`,
      ratio: `${vsSameRows.toFixed(2)} (p99 ${p99Ratio.toFixed(2)}×)`,
      target: targetCell(
        `≥ ${SAME_ROWS_RATIO_TARGET}×, p99 ≤ ${SAME_ROWS_P99_TARGET}×`,
        vsSameRows >= SAME_ROWS_RATIO_TARGET && p99Ratio <= SAME_ROWS_P99_TARGET,
      ),
    },
    {
      benchmark: `GitHub ingestion, ${result.senders} senders — vs a bare Probot app`,
      figure:
        `${formatCount(ingest.median)} signed deliveries/s committed, ` +
        `p50 ${ingest.p50.toFixed(1)} ms, p99 ${ingest.p99.toFixed(1)} ms`,
      baseline:
        `bare Probot app, one statement per delivery, ${formatCount(probot.median)}/s, ` +
        `p99 ${probot.p99.toFixed(1)} ms`,
      ratio: vsProbot.toFixed(2),
      target: '—',
    },
    {
      benchmark: `GitHub ingestion, ${result.senders} senders`,
      figure:
        `${formatCount(ingest.median)} signed deliveries/s committed, ` +
        `p50 ${ingest.p50.toFixed(1)} ms, p99 ${ingest.p99.toFixed(1)} ms`,
      baseline: `single-row \`INSERT\` ${formatCount(insert.median)}/s`,
      ratio: result.ratio.toFixed(2),
      target: targetCell(
        `≥ ${RATIO_TARGET}×, p99 ≤ ${P99_TARGET_MS} ms`,
        result.ratio >= RATIO_TARGET && ingest.p99 <= P99_TARGET_MS,
      ),
    },
    {
      benchmark: `GitHub ingestion, ${result.senders} senders — vs its rows written bare, as one transaction`,
      figure: `${formatCount(ingest.median)} signed deliveries/s committed`,
      baseline: `${TRANSACTION_STATEMENTS} statements in one transaction ${formatCount(transaction.median)}/s (${(transaction.median / insert.median).toFixed(2)}× the single \`INSERT\`)`,
      ratio: (ingest.median / transaction.median).toFixed(2),
      target: '—',
    },
  ];
}

export const ingestBenchmark: Benchmark = {
  name: 'GitHub ingestion',
  run: async (url) => {
    const result = await runIngestBenchmark(url);
    return { summary: ingestSummaryRows(result), details: formatIngestTable(result) };
  },
};

type Work = () => Promise<void>;

/**
 * POSTs one signed delivery, as GitHub does, and insists on a 200 (committed). Each is another
 * comment (its id differs), as real deliveries are: the same body again would be recorded as a
 * replay, and make nothing.
 */
function sender(url: string, fixture: string): Work {
  const template = JSON.parse(fixture) as { comment: { id: number } };
  let next = 0;
  return async () => {
    template.comment.id = 1_000_000_000 + next++;
    const payload = JSON.stringify(template);
    const signature = await sign(SECRET, payload);
    const response = await fetch(`${url}/api/github/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issue_comment',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': signature,
      },
      body: payload,
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`delivery answered ${response.status}: ${text}`);
  };
}

/**
 * The baseline: what one durable write of a comparable row costs on this database — the
 * delivery's recorded fields and the todo's title and body, in one autocommitted INSERT.
 */
async function createInsertTable(sql: postgres.Sql, schema: string): Promise<void> {
  await sql`create schema ${sql(schema)}`;
  await sql`
    create table ${sql(schema)}.receipts (
      id bigint generated always as identity primary key,
      delivery_id text not null unique,
      event text not null,
      action text,
      repository text,
      sender text,
      installation_id bigint,
      title text not null,
      body text,
      received_at timestamptz not null default now()
    )`;
}

/** What a delivery's transaction holds, without switchboard: statements one after another. */
const TRANSACTION_STATEMENTS = 5;

/**
 * A second reference, for where the time goes: a delivery's writes without any of switchboard's
 * work — the receipt, a todo-sized row, its history row and a write-back row, then the receipt's
 * link to the todo — as one transaction of five statements, each waiting for the one before.
 */
function transactor(sql: postgres.Sql, payload: string): Work {
  const { comment } = JSON.parse(payload) as { comment: { body: string } };
  const title = comment.body.split('\n')[0]!;
  return async () => {
    await sql.begin(async (tx) => {
      const [receipt] = await tx<[{ id: string }]>`
        insert into receipts (delivery_id, event, action, repository, sender, installation_id, title, body)
        values (${randomUUID()}, 'issue_comment', 'created', 'Codertocat/Hello-World', 'Codertocat', 1,
                ${title}, ${null}) returning id`;
      const [todo] = await tx<[{ id: string }]>`
        insert into receipts (delivery_id, event, title, body)
        values (${randomUUID()}, 'todo', ${title}, ${comment.body}) returning id`;
      await tx`insert into receipts (delivery_id, event, title) values (${randomUUID()}, 'history', ${todo.id})`;
      await tx`insert into receipts (delivery_id, event, title) values (${randomUUID()}, 'write_back', ${todo.id})`;
      await tx`update receipts set body = ${todo.id} where id = ${receipt.id}`;
    });
  };
}

function inserter(sql: postgres.Sql, payload: string): Work {
  const { comment } = JSON.parse(payload) as { comment: { body: string } };
  return async () => {
    await sql`
      insert into receipts (delivery_id, event, action, repository, sender, installation_id, title, body)
      values (${randomUUID()}, 'issue_comment', 'created', 'Codertocat/Hello-World', 'Codertocat', 1,
              ${comment.body.split('\n')[0]!}, ${comment.body})`;
  };
}

/** `count` calls of `work`, SENDERS at a time, each timed. */
async function runSenders(count: number, work: Work): Promise<Round> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: SENDERS }, async () => {
      while (next < count) {
        next++;
        const begun = performance.now();
        await work();
        latencies.push(performance.now() - begun);
      }
    }),
  );
  return { ms: performance.now() - started, latencies };
}

const SYSTEM_LABELS: Record<SystemKey, string> = {
  ingest: 'signed deliveries over HTTP',
  same_rows: 'bare Probot app writing the same rows',
  probot: 'bare Probot app',
  insert: 'bare single-row INSERT',
  transaction: 'one transaction of five statements',
};

function summarise(
  key: SystemKey,
  rounds: Round[],
  count: number,
  cpu: CpuSplit[],
): IngestResultRow {
  const rates = rounds.map((round) => count / (round.ms / 1000));
  const latencies = rounds.flatMap((round) => round.latencies).sort((a, b) => a - b);
  return {
    key,
    system: SYSTEM_LABELS[key],
    rounds: rates,
    median: median(rates),
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    cpu: cpuPerUnit(cpu, count),
  };
}

function progress(message: string): void {
  process.stderr.write(`ingest: ${message}\n`);
}

runIfMain(import.meta.url, ingestBenchmark);

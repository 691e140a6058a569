// Idle memory of the server with many attached consumers. The server runs alone in a child
// process (the benchmark's own clients do not count); its resident set is read idle, after a
// warm-up and a settle, and again with the consumers attached: once with event streams, once
// with MCP sessions, each on a fresh server.
//
//   npm run bench:memory           (BENCH_SESSIONS=500, BENCH_DATABASE_URL=… optional)
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type postgres from 'postgres';
import { connect } from '../src/platform/db/open-database.js';
import { silentLogger } from '../src/platform/logger.js';
import type { Benchmark, SummaryRow } from './support/benchmark.js';
import { countFromEnv } from './support/count-from-env.js';
import { formatCount, targetCell } from './support/format-summary-table.js';
import { runIfMain } from './support/run-if-main.js';
import { connectMcpConsumer } from './support/connect-mcp-consumer.js';
import { describeLoad, machineLoad } from './support/machine-load.js';
import { openSseStream } from './support/open-sse-stream.js';
import { spawnServerProcess, type ServerProcess } from './support/spawn-server-process.js';

const DEFAULT_SESSIONS = 500;
/** The consumers belong to this many agents, round-robin. */
const AGENTS = 5;
/** Consumers opened concurrently; the warm-up opens as many, so the server's pool is grown. */
const OPEN_AT_ONCE = 20;
/** Quiet time before each reading: timers fire, sockets settle, allocation stops. */
const SETTLE_MS = 3000;
const ATTACH_MS = 120_000;

type Kind = 'sse' | 'mcp';

const LABELS: Record<Kind, string> = {
  sse: 'event streams (`GET /api/v1/events`)',
  mcp: 'MCP sessions (`/mcp`, notification stream open)',
};

/** The server's memory after a full collection, in bytes. */
export interface MemoryReading {
  /** VmRSS from /proc/<pid>/status. */
  rss: number;
  heapUsed: number;
  /** Memory outside the V8 heap that V8 knows of (buffers and the like). */
  external: number;
  /** CPU time (user + system) the server had used, in ms. */
  cpuMs: number;
}

export interface SessionMemoryRow {
  kind: Kind;
  label: string;
  sessions: number;
  idle: MemoryReading;
  attached: MemoryReading;
  /** Resident bytes each attached consumer costs. */
  perSession: number;
  /** Of which in the V8 heap. */
  perSessionHeap: number;
  /** Attached RSS ÷ idle RSS. */
  ratio: number;
  /** The server's CPU time per consumer attached (attaching, then settling), in ms. */
  cpuPerAttachMs: number;
  /** How long the server took to exit after SIGTERM, with every consumer still attached. */
  exitMs: number;
}

export interface SessionMemoryResult {
  sessions: number;
  settleMs: number;
  /** The 1-minute load average when the run started and ended. */
  load: [number, number];
  rows: SessionMemoryRow[];
}

export async function runSessionMemoryBenchmark(
  url: string,
  options: { sessions?: number; settleMs?: number } = {},
): Promise<SessionMemoryResult> {
  const sessions = options.sessions ?? countFromEnv('BENCH_SESSIONS', DEFAULT_SESSIONS);
  const settleMs = options.settleMs ?? SETTLE_MS;
  const runId = randomBytes(3).toString('hex');
  const loadAtStart = machineLoad();
  const rows: SessionMemoryRow[] = [];
  for (const kind of ['sse', 'mcp'] as const) {
    rows.push(await measure(url, `bench_memory_${runId}_${kind}`, kind, sessions, settleMs));
  }
  return { sessions, settleMs, load: [loadAtStart, machineLoad()], rows };
}

interface Consumer {
  close(): Promise<void>;
}

async function measure(
  url: string,
  schema: string,
  kind: Kind,
  sessions: number,
  settleMs: number,
): Promise<SessionMemoryRow> {
  const server = await spawnServerProcess(url, schema);
  let stopped = false;
  const sql = connect(url, { schema, max: 2, log: silentLogger });
  const consumers: Consumer[] = [];
  const closeConsumers = () => Promise.all(consumers.splice(0).map((c) => c.close()));
  try {
    const tokens: string[] = [];
    for (let a = 0; a < AGENTS; a++) tokens.push(await createAgent(server, `bench-${a}`));
    const open = async (i: number): Promise<Consumer> => {
      const token = tokens[i % AGENTS]!;
      if (kind === 'mcp') return connectMcpConsumer(server.url, token);
      const stream = await openSseStream(server.url, token);
      return { close: () => Promise.resolve(stream.close()) };
    };

    // Warm-up: every code path a consumer takes runs, and the server's database pool grows to
    // what attaching OPEN_AT_ONCE consumers at a time needs, before the idle reading.
    await openAll(consumers, OPEN_AT_ONCE, open);
    await waitForSessions(sql, OPEN_AT_ONCE);
    await closeConsumers();
    await waitForSessions(sql, 0);
    const idle = await settleAndRead(server, settleMs);

    const begun = performance.now();
    await openAll(consumers, sessions, open);
    await waitForSessions(sql, sessions);
    progress(`${kind}: ${sessions} attached in ${Math.round(performance.now() - begun)} ms`);
    const attached = await settleAndRead(server, settleMs);

    // SIGTERM with every consumer still attached: the server ends their streams and exits.
    stopped = true;
    const { ms: exitMs } = await server.stop();
    return {
      kind,
      label: LABELS[kind],
      sessions,
      idle,
      attached,
      perSession: (attached.rss - idle.rss) / sessions,
      perSessionHeap: (attached.heapUsed - idle.heapUsed) / sessions,
      ratio: attached.rss / idle.rss,
      cpuPerAttachMs: (attached.cpuMs - idle.cpuMs) / sessions,
      exitMs,
    };
  } finally {
    await closeConsumers().catch(() => {});
    if (!stopped) await server.stop().catch(() => {});
    await sql`drop schema if exists ${sql(schema)} cascade`.catch(() => {});
    await sql.end({ timeout: 5 });
  }
}

/** The printed result: markdown table lines, ready to paste into the README. */
export function formatSessionMemoryTable(result: SessionMemoryResult): string {
  const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  const kib = (bytes: number) => (bytes / 1024).toFixed(1);
  return [
    `${result.sessions} consumers attached to one server process (its own process, fresh for each row), ` +
      `as ${AGENTS} agents; read after ${result.settleMs / 1000} s of quiet and a full GC`,
    '',
    '| consumers | idle RSS MiB | attached RSS MiB | ratio | per consumer KiB | of which V8 heap KiB | server CPU per attach ms |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...result.rows.map(
      (row) =>
        `| ${row.sessions} ${row.label} | ${mib(row.idle.rss)} | ${mib(row.attached.rss)} | ${row.ratio.toFixed(2)} | ${kib(row.perSession)} | ${kib(row.perSessionHeap)} | ${row.cpuPerAttachMs.toFixed(1)} |`,
    ),
    '',
    `idle V8 heap: ${result.rows.map((row) => `${row.kind} ${mib(row.idle.heapUsed)} MiB`).join(', ')}; ` +
      `exit after SIGTERM, consumers still attached: ${result.rows.map((row) => `${row.kind} ${Math.round(row.exitMs)} ms`).join(', ')}`,
    describeLoad(...result.load),
  ].join('\n');
}

const SUMMARY_LABELS: Record<Kind, string> = { sse: 'event streams', mcp: 'MCP sessions' };

/** Issue 11: an idle MCP session (notification stream open) costs at most 20 KiB. */
const MCP_SESSION_TARGET_KIB = 20;

/** The summary table's rows: the server attached against the same server idle. */
export function sessionMemorySummaryRows(result: SessionMemoryResult): SummaryRow[] {
  const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  const sse = result.rows.find((row) => row.kind === 'sse');
  return result.rows.flatMap((row) => [
    {
      benchmark: `idle memory, ${formatCount(row.sessions)} ${SUMMARY_LABELS[row.kind]}`,
      figure:
        `${(row.perSession / 1024).toFixed(1)} KiB each, V8 heap ${(row.perSessionHeap / 1024).toFixed(1)} KiB ` +
        `(RSS ${mib(row.idle.rss)} → ${mib(row.attached.rss)} MiB)`,
      baseline: `the idle server, ${mib(row.idle.rss)} MiB`,
      ratio: row.ratio.toFixed(2),
      target:
        row.kind === 'mcp'
          ? targetCell(
              `≤ ${MCP_SESSION_TARGET_KIB} KiB each`,
              row.perSession / 1024 <= MCP_SESSION_TARGET_KIB,
            )
          : '—',
    },
    ...(row.kind === 'mcp'
      ? [
          {
            benchmark: `SIGTERM to exit, ${formatCount(row.sessions)} MCP sessions open`,
            figure: `${Math.round(row.exitMs)} ms`,
            baseline: `the same with ${formatCount(row.sessions)} event streams open, ${Math.round(sse?.exitMs ?? 0)} ms`,
            ratio: sse ? (row.exitMs / Math.max(1, sse.exitMs)).toFixed(2) : '—',
            target: '—',
          },
        ]
      : []),
  ]);
}

export const sessionMemoryBenchmark: Benchmark = {
  name: 'session memory',
  run: async (url) => {
    const result = await runSessionMemoryBenchmark(url);
    return { summary: sessionMemorySummaryRows(result), details: formatSessionMemoryTable(result) };
  },
};

async function createAgent(server: ServerProcess, name: string): Promise<string> {
  const response = await fetch(`${server.url}/api/v1/agents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, queues: ['bench'] }),
  });
  const body = (await response.json()) as { token?: string };
  if (response.status !== 201 || !body.token)
    throw new Error(`creating agent ${name} answered ${response.status}`);
  return body.token;
}

/** Opens `count` consumers, `OPEN_AT_ONCE` at a time, into `consumers`. */
async function openAll(
  consumers: Consumer[],
  count: number,
  open: (i: number) => Promise<Consumer>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(OPEN_AT_ONCE, count) }, async () => {
      while (next < count) consumers.push(await open(next++));
    }),
  );
}

async function settleAndRead(server: ServerProcess, settleMs: number): Promise<MemoryReading> {
  await sleep(settleMs);
  const { memory, cpu } = await server.gc();
  return {
    rss: await server.rss(),
    heapUsed: memory.heapUsed,
    external: memory.external,
    cpuMs: (cpu.user + cpu.system) / 1000,
  };
}

/** Waits until exactly `count` consumers are registered in the server's schema. */
async function waitForSessions(sql: postgres.Sql, count: number): Promise<void> {
  const deadline = Date.now() + ATTACH_MS;
  for (;;) {
    const [{ n }] = await sql<[{ n: number }]>`select count(*)::int as n from consumer_sessions`;
    if (n === count) return;
    if (Date.now() > deadline) throw new Error(`${n} consumer sessions registered, not ${count}`);
    await sleep(50);
  }
}

function progress(message: string): void {
  process.stderr.write(`memory: ${message}\n`);
}

runIfMain(import.meta.url, sessionMemoryBenchmark);

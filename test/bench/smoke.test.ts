import { expect, inject, test } from 'vitest';
import {
  agentPathsSummaryRows,
  formatAgentPathsTable,
  runAgentPathsBenchmark,
} from '../../bench/agent-paths.js';
import { claimSummaryRows, formatClaimTable, runClaimBenchmark } from '../../bench/claim.js';
import {
  cliStartupSummaryRows,
  formatCliStartupTable,
  runCliStartupBenchmark,
} from '../../bench/cli-startup.js';
import {
  consoleLatencySummaryRows,
  formatConsoleLatencyTable,
  runConsoleLatencyBenchmark,
} from '../../bench/console-latency.js';
import { formatIngestTable, ingestSummaryRows, runIngestBenchmark } from '../../bench/ingest.js';
import { formatLoadTable, loadFailures, runLoad } from '../../bench/load.js';
import {
  formatSessionMemoryTable,
  runSessionMemoryBenchmark,
  sessionMemorySummaryRows,
} from '../../bench/session-memory.js';
import { cpuCells, cpuPerUnit, startCpuSplit } from '../../bench/support/cpu-split.js';
import { formatSummaryTable } from '../../bench/support/format-summary-table.js';
import {
  floodSummaryRows,
  formatFloodTable,
  runWebhookFloodBenchmark,
} from '../../bench/webhook-flood.js';
import {
  deliveryWakeSummaryRows,
  formatWakeLatencyTable,
  runWakeLatencyBenchmark,
  wakeLatencySummaryRows,
} from '../../bench/wake-latency.js';

test("the CPU split reads a process's time from /proc, and takes the median per unit", () => {
  const since = startCpuSplit(process.pid)!;
  // Busy for 200 ms of CPU: this process is both the "server" and the "clients" here.
  const started = process.cpuUsage();
  for (let spent = 0; spent < 200_000;) {
    const used = process.cpuUsage(started);
    spent = used.user + used.system;
  }
  const split = since();
  expect(split.clients).toBeGreaterThanOrEqual(200);
  // /proc counts in 10 ms ticks.
  expect(split.server).toBeGreaterThanOrEqual(180);
  expect(Math.abs(split.server! - split.clients)).toBeLessThanOrEqual(30);
  expect(split.machine).toBeGreaterThanOrEqual(split.server! - 20);
  expect(startCpuSplit(null)!().server).toBeNull();

  const rounds = [
    { server: 30, clients: 10, postgres: 20, machine: 60 },
    { server: 90, clients: 40, postgres: 50, machine: 180 },
    { server: 60, clients: 20, postgres: 30, machine: 110 },
  ];
  expect(cpuPerUnit(rounds, 10)).toEqual({ server: 6, clients: 2, postgres: 3, machine: 11 });
  // A part missing from any round (a database on another machine) is missing from the median.
  expect(cpuPerUnit([...rounds, { ...rounds[0]!, postgres: null }], 10)!.postgres).toBeNull();
  expect(cpuCells(cpuPerUnit([{ ...rounds[0]!, server: null }], 3))).toBe(
    '— | 3.33 | 6.67 | 20.00',
  );
  expect(cpuPerUnit([], 10)).toBeNull();
});

// The benchmarks are measured by `npm run bench`, not here; this only keeps them working (a
// small run still checks that every todo was claimed and completed exactly once).
test('the claim benchmark runs end to end', { timeout: 120_000 }, async () => {
  const result = await runClaimBenchmark(inject('databaseUrl'), { todos: 60 });
  expect(result.rows.map((row) => row.key).sort()).toEqual([
    'bare',
    'graphile',
    'graphile_batched',
    'ledger',
  ]);
  for (const row of result.rows) {
    expect(row.rounds).toHaveLength(3);
    expect(row.median).toBeGreaterThan(0);
  }
  expect(formatClaimTable(result)).toContain('| ledger |');
  const summary = claimSummaryRows(result);
  expect(summary.map((row) => row.baseline)).toEqual([
    expect.stringContaining('bare `SKIP LOCKED`'),
    expect.stringContaining('graphile-worker 0.17 '),
    expect.stringContaining('localQueue'),
  ]);
  // The batched graphile-worker is shown beside the default one, with no target of its own.
  expect(summary.map((row) => /: (met|\*\*missed\*\*)$/.test(row.target))).toEqual([
    true,
    true,
    false,
  ]);
  expect(formatSummaryTable(summary)).toContain('| claim + complete, 8 workers, 60 todos — vs');
});

test('the ingestion benchmark runs end to end', { timeout: 120_000 }, async () => {
  // A small run still checks that every delivery was answered 200 and committed with its todo.
  const result = await runIngestBenchmark(inject('databaseUrl'), { deliveries: 20 });
  // The bare Probot apps' deliveries are checked too: each recorded once, with its todo (and the
  // same-rows app's with the same rows as switchboard's).
  expect(result.rows.map((row) => row.key)).toEqual([
    'ingest',
    'same_rows',
    'probot',
    'insert',
    'transaction',
  ]);
  for (const row of result.rows) {
    expect(row.rounds).toHaveLength(3);
    expect(row.p99).toBeGreaterThanOrEqual(row.p50);
  }
  expect(result.ratio).toBeGreaterThan(0);
  expect(formatIngestTable(result)).toContain('| signed deliveries over HTTP, committed |');
  expect(ingestSummaryRows(result)).toEqual([
    expect.objectContaining({
      benchmark: expect.stringContaining('switchboard vs same-rows reference'),
      figure: expect.stringMatching(/\(load \d+\.\d → \d+\.\d on \d+ cores\)$/),
      baseline: expect.stringContaining('bare Probot app writing the same rows'),
      target: expect.stringMatching(/^≥ 0\.8×, p99 ≤ 1\.3×: (met|\*\*missed\*\*)$/),
    }),
    expect.objectContaining({
      baseline: expect.stringContaining('bare Probot app, one statement'),
      target: '—',
    }),
    expect.objectContaining({
      ratio: result.ratio.toFixed(2),
      target: expect.stringMatching(/^≥ 0\.3×, p99 ≤ 50 ms: (met|\*\*missed\*\*)$/),
    }),
    expect.objectContaining({
      baseline: expect.stringContaining('5 statements in one transaction'),
    }),
  ]);
  expect(formatIngestTable(result)).toContain('one transaction of 5 statements');
  // Where each system's CPU went: the server's own process for the two that have one.
  expect(result.rows.map((row) => row.cpu?.server === null)).toEqual([
    false,
    false,
    false,
    true,
    true,
  ]);
  for (const row of result.rows) expect(row.cpu!.clients).toBeGreaterThan(0);
  expect(formatIngestTable(result)).toContain('| what | server | senders | PostgreSQL | machine |');
});

test('the wake latency benchmark runs end to end', { timeout: 120_000 }, async () => {
  // A small run still checks that every wake reached its MCP client and its event stream.
  const result = await runWakeLatencyBenchmark(inject('databaseUrl'), { events: 5 });
  expect(result.rows.map((row) => row.key)).toEqual(['graphile', 'mcp', 'sse', 'channel']);
  // A todo made by a GitHub delivery, heard through the channel, and one made by a source's,
  // heard on its stream; and the bare Probot app's answers to the same GitHub delivery.
  expect(result.deliveries.map((row) => row.key)).toEqual(['github', 'source', 'probot']);
  expect(result.deliveryReference).toBeGreaterThan(0);
  for (const row of [...result.rows, ...result.deliveries]) {
    expect(row.latency.p50).toBeGreaterThan(0);
    expect(row.latency.p99).toBeGreaterThanOrEqual(row.latency.p50);
  }
  expect(result.takeRing.p50).toBeGreaterThan(0);
  expect(formatWakeLatencyTable(result)).toContain('MCP `notifications/message`');
  expect(wakeLatencySummaryRows(result).map((row) => row.benchmark)).toEqual([
    expect.stringContaining('MCP'),
    expect.stringContaining('event-stream'),
    expect.stringContaining('switchboard channel'),
  ]);
  expect(wakeLatencySummaryRows(result)[0]!.target).toMatch(
    /^p50 ≤ 1\.5×, p99 ≤ 25 ms: (met|\*\*missed\*\*)$/,
  );
  expect(deliveryWakeSummaryRows(result)[0]!.target).toMatch(
    /^p50 ≤ 1\.5×, p99 ≤ 25 ms: (met|\*\*missed\*\*)$/,
  );
});

test('the session memory benchmark runs end to end', { timeout: 180_000 }, async () => {
  // A small run still checks that every consumer attached and that the server process exited
  // by itself on SIGTERM.
  const result = await runSessionMemoryBenchmark(inject('databaseUrl'), {
    sessions: 10,
    settleMs: 100,
  });
  expect(result.rows.map((row) => row.kind)).toEqual(['sse', 'mcp']);
  for (const row of result.rows) {
    expect(row.idle.rss).toBeGreaterThan(0);
    expect(row.attached.rss).toBeGreaterThan(0);
  }
  expect(formatSessionMemoryTable(result)).toContain('MCP sessions');
  expect(sessionMemorySummaryRows(result).map((row) => row.benchmark)).toEqual([
    'idle memory, 10 event streams',
    'idle memory, 10 MCP sessions',
    'SIGTERM to exit, 10 MCP sessions open',
  ]);
  for (const row of result.rows) expect(row.exitMs).toBeGreaterThan(0);
});

test('the webhook flood benchmark runs end to end', { timeout: 120_000 }, async () => {
  // Three small bodies: each is answered (401, or 503 when the budget is full), and the server's
  // memory is read around them.
  const result = await runWebhookFloodBenchmark(inject('databaseUrl'), { bodies: 3, megabytes: 1 });
  expect(result.rows.map((row) => row.label)).toEqual(['no budget', 'the default budget']);
  for (const row of result.rows) {
    expect(row.peakRss).toBeGreaterThanOrEqual(row.idleRss);
    expect(Object.values(row.statuses).reduce((a, b) => a + b)).toBe(3);
    expect(Object.keys(row.statuses).every((status) => ['401', '503'].includes(status))).toBe(true);
  }
  expect(formatFloodTable(result)).toContain('| no budget (unbounded) |');
  expect(floodSummaryRows(result)[0]!.benchmark).toBe(
    '3 concurrent 1 MB webhook bodies, bad signatures',
  );
});

test('the web console benchmark runs end to end', { timeout: 180_000 }, async () => {
  // A few prompts: each still has to reach the event stream and the page open in Chromium; and a
  // few page streams, each registered as a consumer of a server in its own process.
  const result = await runConsoleLatencyBenchmark(inject('databaseUrl'), {
    prompts: 3,
    pages: 5,
    settleMs: 100,
  });
  for (const d of [result.stream, result.dom, result.frame]) {
    expect(d.p50).toBeGreaterThan(0);
    expect(d.p99).toBeGreaterThanOrEqual(d.p50);
  }
  expect(result.frame.p50).toBeGreaterThanOrEqual(result.dom.p50);
  expect(result.idleRss).toBeGreaterThan(0);
  expect(formatConsoleLatencyTable(result)).toContain("its card in the page's DOM");
  expect(consoleLatencySummaryRows(result).map((row) => row.benchmark)).toEqual([
    'web console, relayed prompt → card on screen in Chromium',
    'idle memory, 5 console page streams',
  ]);
});

test('the CLI start-up benchmark runs end to end', { timeout: 120_000 }, async () => {
  // One timed run (after the warm-up) of the built CLI against a real server; it checks that
  // `todo list --json` exits 0 and lists the page of todos it was given.
  const result = await runCliStartupBenchmark(inject('databaseUrl'), { runs: 1 });
  expect(result.cliMs).toHaveLength(1);
  expect(result.ratio).toBeGreaterThan(0);
  expect(formatCliStartupTable(result)).toContain('| `switchboard todo list --json` (20 todos) |');
  expect(cliStartupSummaryRows(result)).toEqual([
    expect.objectContaining({
      ratio: result.ratio.toFixed(2),
      target: expect.stringMatching(/^≤ 1\.5×: (met|\*\*missed\*\*)$/),
    }),
  ]);
  expect(formatCliStartupTable(result)).toContain('machine load (1-minute average)');
});

test('the load run runs end to end', { timeout: 180_000 }, async () => {
  // A few seconds at a low rate: a real server process with a webhook secret, signed deliveries,
  // 8 workers and a wake consumer. It still checks every delivery against the ledger: each
  // answered one has exactly one todo, completed exactly once.
  const result = await runLoad(inject('databaseUrl'), { seconds: 3, rate: 10, warmupSeconds: 1 });
  expect(result.sent).toBe(40);
  expect(result.accepted).toBe(40);
  expect(result.refused).toEqual({});
  expect(result.lost).toEqual({ noTodo: 0, notCompleted: 0 });
  expect(result.doubled).toEqual({ todos: 0, completions: 0, claims: 0 });
  expect(loadFailures(result)).toBe(0);
  expect(result.workerErrors).toEqual([]);
  expect(result.ingest.p99).toBeGreaterThanOrEqual(result.ingest.p50);
  expect(result.rss.samples.length).toBeGreaterThanOrEqual(2);
  expect(result.rss.start).toBeGreaterThan(0);
  expect(formatLoadTable(result)).toContain(
    '| **lost** (answered 2xx, but no todo / never completed) | **0**',
  );
});

test('the agent paths benchmark runs end to end', { timeout: 180_000 }, async () => {
  // A small run still checks that every todo was claimed and completed once, over MCP and the API.
  const result = await runAgentPathsBenchmark(inject('databaseUrl'), { todos: 30, requests: 20 });
  // The bare MCP servers' rounds are checked too: every job of each done once (the same-rows
  // server's with one claim and one completion in its history).
  expect(result.throughput.map((row) => row.key)).toEqual([
    'mcp',
    'api',
    'same_rows_mcp',
    'bare_mcp',
    'graphile',
  ]);
  for (const row of result.throughput) {
    expect(row.rounds).toHaveLength(3);
    expect(row.median).toBeGreaterThan(0);
  }
  expect(result.latency.map((row) => row.key)).toEqual([
    'bare',
    'whoami',
    'create',
    'tool',
    'mcp_create',
  ]);
  for (const row of result.latency) expect(row.ms.p99).toBeGreaterThanOrEqual(row.ms.p50);
  expect(formatAgentPathsTable(result)).toContain('| 8 MCP clients over Streamable HTTP');
  // graphile-worker's workers run in the benchmark's process: it has no server of its own.
  expect(result.throughput.map((row) => row.cpu?.server === null)).toEqual([
    false,
    false,
    false,
    false,
    true,
  ]);
  expect(formatAgentPathsTable(result)).toContain(
    '| path | server | clients | PostgreSQL | machine |',
  );
  const summary = agentPathsSummaryRows(result);
  expect(summary[0]!.benchmark).toContain('switchboard vs same-rows reference');
  expect(summary[0]!.baseline).toContain('bare MCP server writing the same rows');
  expect(summary[0]!.figure).toMatch(/\(load \d+\.\d → \d+\.\d on \d+ cores\)$/);
  expect(summary[0]!.target).toMatch(/^≥ 0\.85×: (met|\*\*missed\*\*)$/);
  // The bare MCP server doing only the protocol's work stays, for continuity, with no target.
  expect(summary[1]!.baseline).toContain('one `UPDATE … SKIP LOCKED`');
  expect(summary[1]!.target).toBe('—');
  expect(summary.slice(2, 5).every((row) => /: (met|\*\*missed\*\*)$/.test(row.target))).toBe(true);
});

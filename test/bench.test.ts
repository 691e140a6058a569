import { expect, inject, test } from 'vitest';
import { formatClaimTable, runClaimBenchmark } from '../bench/claim.js';
import { formatCliStartupTable, runCliStartupBenchmark } from '../bench/cli-startup.js';
import { formatIngestTable, runIngestBenchmark } from '../bench/ingest.js';
import { formatSessionMemoryTable, runSessionMemoryBenchmark } from '../bench/session-memory.js';
import { formatWakeLatencyTable, runWakeLatencyBenchmark } from '../bench/wake-latency.js';

// The benchmarks are measured by `npm run bench`, not here; this only keeps them working (a
// small run still checks that every todo was claimed and completed exactly once).
test('the claim benchmark runs end to end', { timeout: 120_000 }, async () => {
  const result = await runClaimBenchmark(inject('databaseUrl'), { todos: 60 });
  expect(result.rows.map((row) => row.key).sort()).toEqual(['bare', 'graphile', 'ledger']);
  for (const row of result.rows) {
    expect(row.rounds).toHaveLength(3);
    expect(row.median).toBeGreaterThan(0);
  }
  expect(formatClaimTable(result)).toContain('| ledger |');
});

test('the ingestion benchmark runs end to end', { timeout: 120_000 }, async () => {
  // A small run still checks that every delivery was answered 200 and committed with its todo.
  const result = await runIngestBenchmark(inject('databaseUrl'), { deliveries: 20 });
  expect(result.rows.map((row) => row.key)).toEqual(['ingest', 'insert']);
  for (const row of result.rows) {
    expect(row.rounds).toHaveLength(3);
    expect(row.p99).toBeGreaterThanOrEqual(row.p50);
  }
  expect(result.ratio).toBeGreaterThan(0);
  expect(formatIngestTable(result)).toContain('| signed deliveries over HTTP, committed |');
});

test('the wake latency benchmark runs end to end', { timeout: 120_000 }, async () => {
  // A small run still checks that every wake reached its MCP client and its event stream.
  const result = await runWakeLatencyBenchmark(inject('databaseUrl'), { events: 5 });
  expect(result.rows.map((row) => row.key)).toEqual(['graphile', 'mcp', 'sse', 'channel']);
  for (const row of result.rows) {
    expect(row.latency.p50).toBeGreaterThan(0);
    expect(row.latency.p99).toBeGreaterThanOrEqual(row.latency.p50);
  }
  expect(result.takeRing.p50).toBeGreaterThan(0);
  expect(formatWakeLatencyTable(result)).toContain('MCP `notifications/message`');
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
});

test('the CLI start-up benchmark runs end to end', { timeout: 120_000 }, async () => {
  // One timed run (after the warm-up) of the built CLI against a real server; it checks that
  // `todo list --json` exits 0 and lists the page of todos it was given.
  const result = await runCliStartupBenchmark(inject('databaseUrl'), { runs: 1 });
  expect(result.cliMs).toHaveLength(1);
  expect(result.ratio).toBeGreaterThan(0);
  expect(formatCliStartupTable(result)).toContain('| `switchboard todo list --json` (20 todos) |');
});

// Every benchmark, in sequence, on one database: `npm run bench`. Prints one summary table of
// figures and ratios (one row per comparison), then each benchmark's detailed table, which
// explains its rows. The sustained load run is not here: it takes a minute on its own
// (`npm run load`, bench/load.ts).
import { agentPathsBenchmark } from './agent-paths.js';
import { claimBenchmark } from './claim.js';
import { cliStartupBenchmark } from './cli-startup.js';
import { consoleLatencyBenchmark } from './console-latency.js';
import { ingestBenchmark } from './ingest.js';
import { sessionMemoryBenchmark } from './session-memory.js';
import type { Benchmark, SummaryRow } from './support/benchmark.js';
import { startBenchDatabase } from './support/bench-database.js';
import { describeMachine } from './support/describe-machine.js';
import { formatSummaryTable } from './support/format-summary-table.js';
import { growthBenchmark } from './growth.js';
import { machineLoad } from './support/machine-load.js';
import { wakeLatencyBenchmark } from './wake-latency.js';
import { webhookFloodBenchmark } from './webhook-flood.js';

/** Add a benchmark here: a module exporting `{ name, run(url) }`. */
const benchmarks: Benchmark[] = [
  claimBenchmark,
  agentPathsBenchmark,
  ingestBenchmark,
  webhookFloodBenchmark,
  wakeLatencyBenchmark,
  sessionMemoryBenchmark,
  consoleLatencyBenchmark,
  cliStartupBenchmark,
  growthBenchmark,
];

async function main(): Promise<void> {
  const startLoad = machineLoad();
  const summary: SummaryRow[] = [];
  const sections: string[] = [];
  let failed = 0;
  const database = await startBenchDatabase();
  try {
    for (const benchmark of benchmarks) {
      const started = performance.now();
      process.stderr.write(`bench: ${benchmark.name}…\n`);
      try {
        const report = await benchmark.run(database.url);
        const seconds = ((performance.now() - started) / 1000).toFixed(1);
        summary.push(...report.summary);
        sections.push(`## ${benchmark.name} (${seconds} s)\n\n${report.details}`);
      } catch (error) {
        // One benchmark failing (a count check, a timeout) still leaves the others' figures.
        failed++;
        const message = error instanceof Error ? error.message : String(error);
        summary.push({
          benchmark: benchmark.name,
          figure: `**failed**: ${message.split('\n')[0]!}`,
          baseline: '—',
          ratio: '—',
          target: '—',
        });
        sections.push(`## ${benchmark.name}: failed\n\n${String(error)}`);
        console.error(error);
      }
    }
  } finally {
    await database.stop();
  }
  console.log(
    [
      `# switchboard benchmarks — ${describeMachine(startLoad)}`,
      '',
      formatSummaryTable(summary),
      '',
      'The sustained load run (signed deliveries at a steady rate, 8 workers, a minute) is a ' +
        'separate script: `npm run load`.',
      '',
      ...sections.flatMap((section) => [section, '']),
    ].join('\n'),
  );
  if (failed > 0) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

// Every benchmark, in sequence, on one database: `npm run bench`.
import { claimBenchmark } from './claim.js';
import { cliStartupBenchmark } from './cli-startup.js';
import { ingestBenchmark } from './ingest.js';
import { sessionMemoryBenchmark } from './session-memory.js';
import type { Benchmark } from './support/benchmark.js';
import { startBenchDatabase } from './support/bench-database.js';
import { wakeLatencyBenchmark } from './wake-latency.js';

/** Add a benchmark here: a module exporting `{ name, run(url) }`. */
const benchmarks: Benchmark[] = [
  claimBenchmark,
  ingestBenchmark,
  wakeLatencyBenchmark,
  sessionMemoryBenchmark,
  cliStartupBenchmark,
];

async function main(): Promise<void> {
  const database = await startBenchDatabase();
  try {
    for (const benchmark of benchmarks) {
      const started = performance.now();
      const table = await benchmark.run(database.url);
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      console.log(`## ${benchmark.name} (${seconds} s)\n\n${table}\n`);
    }
  } finally {
    await database.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

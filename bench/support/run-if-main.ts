import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { Benchmark } from './benchmark.js';
import { startBenchDatabase } from './bench-database.js';
import { formatSummaryTable } from './format-summary-table.js';

/** Whether `moduleUrl` is the program (`tsx bench/claim.ts`) rather than imported. */
export function isMain(moduleUrl: string): boolean {
  const entry = process.argv[1];
  return entry !== undefined && moduleUrl === pathToFileURL(realpathSync(entry)).href;
}

/** Runs a benchmark on its own database when its module is the program (`tsx bench/claim.ts`). */
export function runIfMain(moduleUrl: string, benchmark: Benchmark): void {
  if (!isMain(moduleUrl)) return;
  void (async () => {
    const database = await startBenchDatabase();
    try {
      const { summary, details } = await benchmark.run(database.url);
      console.log(`${formatSummaryTable(summary)}\n\n${details}`);
    } finally {
      await database.stop();
    }
  })().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}

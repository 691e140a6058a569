import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { Benchmark } from './benchmark.js';
import { startBenchDatabase } from './bench-database.js';

/** Runs a benchmark on its own database when its module is the program (`tsx bench/claim.ts`). */
export function runIfMain(moduleUrl: string, benchmark: Benchmark): void {
  const entry = process.argv[1];
  if (!entry || moduleUrl !== pathToFileURL(realpathSync(entry)).href) return;
  void (async () => {
    const database = await startBenchDatabase();
    try {
      console.log(await benchmark.run(database.url));
    } finally {
      await database.stop();
    }
  })().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}

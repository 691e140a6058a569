import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres } from '../../src/platform/db/start-embedded-postgres.js';
import { silentLogger } from '../../src/platform/logger.js';

export interface BenchDatabase {
  url: string;
  /** Whether the server was started here (no BENCH_DATABASE_URL). */
  embedded: boolean;
  /** Stops the embedded server and removes its folder; does nothing for BENCH_DATABASE_URL. */
  stop(): Promise<void>;
}

/**
 * The PostgreSQL the benchmarks run on: BENCH_DATABASE_URL when set, else an embedded server in
 * a fresh temporary folder. Each benchmark then works in schemas of its own on that database.
 */
export async function startBenchDatabase(): Promise<BenchDatabase> {
  const given = process.env.BENCH_DATABASE_URL;
  if (given) return { url: given, embedded: false, stop: () => Promise.resolve() };

  const dir = await mkdtemp(join(tmpdir(), 'switchboard-bench-'));
  try {
    // As root the server runs as the `postgres` user, which must be able to enter this folder.
    await chmod(dir, 0o755);
    const server = await startEmbeddedPostgres(dir, silentLogger);
    let stopped: Promise<void> | undefined;
    return {
      url: server.url,
      embedded: true,
      stop: () =>
        (stopped ??= (async () => {
          try {
            await server.stop();
          } finally {
            await rm(dir, { recursive: true, force: true });
          }
        })()),
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

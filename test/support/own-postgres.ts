import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  freePort,
  startEmbeddedPostgres,
  type EmbeddedPostgres,
} from '../../src/platform/db/start-embedded-postgres.js';
import { silentLogger } from '../../src/platform/logger.js';

export interface OwnPostgres {
  /** The same URL across restarts: the port is fixed. */
  url: string;
  port: number;
  /** Stops the server (fast shutdown: every session is ended, as in a restart or failover). */
  stop(): Promise<void>;
  /** Starts it again, on the same port and files. */
  start(): Promise<void>;
  /** Stops it if running and removes its files. */
  remove(): Promise<void>;
}

/**
 * A PostgreSQL of a test's own — a cluster in a temporary folder, on a fixed port — for tests
 * that stop and start the database under a running server, which the run's shared one must not.
 */
export async function startOwnPostgres(): Promise<OwnPostgres> {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-own-pg-'));
  // As root the server runs as the `postgres` user, which must be able to enter this folder.
  await chmod(dir, 0o755);
  const port = await freePort();
  const open = () => startEmbeddedPostgres(dir, silentLogger, { port, handleSignals: false });
  let running: EmbeddedPostgres | undefined = await open();
  const { url } = running;
  return {
    url,
    port,
    async stop() {
      await running?.stop();
      running = undefined;
    },
    async start() {
      running ??= await open();
    },
    async remove() {
      await running?.stop();
      running = undefined;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

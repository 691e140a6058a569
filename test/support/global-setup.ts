import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/platform/db/start-embedded-postgres.js';
import { silentLogger } from '../../src/platform/logger.js';
import { findChromium, type FoundChromium } from '../web/support/find-chromium.js';
import { failOnLeftoverProcesses, RUN_MARK } from './leftover-processes.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    /** The browser the browser tests drive. */
    chromium: FoundChromium;
  }
}

/**
 * The browser for the browser tests (findChromium), and one real PostgreSQL for the whole run: TEST_DATABASE_URL when set, else an embedded server
 * in a temporary folder. Each test file then works in a schema of its own.
 */
export default async function setup(project: TestProject) {
  // Inherited by every process the run starts; the teardown fails the run if one is left.
  const runId = randomUUID();
  process.env[RUN_MARK] = runId;

  // Found (or unpacked) once for the run; none fails the run here, with the line saying why.
  const chromium = await findChromium();
  console.log(`browser tests: ${chromium.source} (${chromium.path})`);
  project.provide('chromium', chromium);

  const given = process.env.TEST_DATABASE_URL;
  if (given) {
    project.provide('databaseUrl', given);
    return () => failOnLeftoverProcesses(runId);
  }
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-test-'));
  // As root the server runs as the `postgres` user, which must be able to enter this folder.
  await chmod(dir, 0o755);
  const postgres = await startEmbeddedPostgres(dir, silentLogger);
  project.provide('databaseUrl', postgres.url);
  return async () => {
    await postgres.stop();
    await rm(dir, { recursive: true, force: true });
    await failOnLeftoverProcesses(runId);
  };
}

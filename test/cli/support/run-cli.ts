import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, onTestFinished, TestRunner } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const BIN = join(ROOT, 'bin', 'run.js');

if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) {
  throw new Error("the CLI is not built: run 'npm run build' (npm test does it first)");
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A home of its own for the CLI: XDG folders in a temporary directory, so nothing touches ~. */
export interface CliHome {
  dir: string;
  env: Record<string, string>;
  remove(): Promise<void>;
}

export async function createCliHome(): Promise<CliHome> {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-cli-'));
  return {
    dir,
    env: {
      XDG_CONFIG_HOME: join(dir, 'config'),
      XDG_STATE_HOME: join(dir, 'state'),
      XDG_DATA_HOME: join(dir, 'data'),
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** The environment a CLI child sees: ours, minus anything that would point it elsewhere. */
function childEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) =>
        !key.startsWith('SWITCHBOARD_') &&
        !key.startsWith('XDG_') &&
        ![
          'DEBUG',
          'DATABASE_URL',
          'DATABASE_DIRECT_URL',
          'WEBHOOK_SECRET',
          'PORT',
          'NODE_OPTIONS',
        ].includes(key),
    ),
  );
  return { ...base, ...env };
}

export interface RunningCli {
  child: ChildProcessWithoutNullStreams;
  /** Everything it printed on stdout so far. */
  readonly stdout: string;
  /** Everything it printed on stderr so far. */
  readonly stderr: string;
  /** Its exit code and whole output, once it exited. */
  done: Promise<CliResult>;
  /** Resolves once stdout matches; rejects if the command exits first or takes too long. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
}

/** Starts `switchboard ARGS…` as a child process (for commands that keep running). */
export function startCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  {
    input,
    detached = false,
    lifetime = 'test',
  }: {
    input?: string;
    detached?: boolean;
    /** `file`: shared by the file's later tests, so it ends with the file, not with this test. */
    lifetime?: 'test' | 'file';
  } = {},
): RunningCli {
  // detached: a process group of its own, as a terminal gives a command (Ctrl-C signals it all).
  const child = spawn(process.execPath, [BIN, ...args], {
    env: childEnv(env),
    cwd: ROOT,
    detached,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.end(input);
  const done = new Promise<CliResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
  endsWithItsTest(child, done, detached, lifetime);
  return {
    child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    done,
    waitFor(text, timeoutMs = 20_000) {
      const matches = () => (typeof text === 'string' ? stdout.includes(text) : text.test(stdout));
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          cleanup();
          reject(
            new Error(
              `timed out waiting for ${String(text)}; stdout:\n${stdout}\nstderr:\n${stderr}`,
            ),
          );
        }, timeoutMs);
        const check = () => {
          if (!matches()) return;
          cleanup();
          resolve();
        };
        const onClose = () => {
          cleanup();
          if (matches()) resolve();
          else
            reject(
              new Error(
                `exited before printing ${String(text)}; stdout:\n${stdout}\nstderr:\n${stderr}`,
              ),
            );
        };
        const cleanup = () => {
          clearTimeout(timer);
          child.stdout.off('data', check);
          child.off('close', onClose);
        };
        child.stdout.on('data', check);
        child.once('close', onClose);
        check();
      });
    },
  };
}

/** Started outside a test (in beforeAll): these end with the file, in afterAll. */
const startedByTheFile = new Set<() => Promise<void>>();
afterAll(async () => {
  await Promise.all([...startedByTheFile].map((stop) => stop()));
});

/**
 * Every process a test starts ends with that test (or its file), whatever its outcome: a test that failed
 * (or timed out) waiting for `up` would otherwise leave it running, holding its data directory
 * for the next test and outliving the run. SIGTERM first, so that `up` stops its PostgreSQL;
 * SIGKILL (the whole group, when it has one) if it is still there 10 s later.
 */
function endsWithItsTest(
  child: ChildProcessWithoutNullStreams,
  done: Promise<unknown>,
  detached: boolean,
  lifetime: 'test' | 'file',
): void {
  const ended = () => child.exitCode !== null || child.signalCode !== null;
  const signal = (name: NodeJS.Signals) => {
    try {
      if (detached) process.kill(-child.pid!, name);
      else child.kill(name);
    } catch {
      // ended meanwhile
    }
  };
  const stop = async () => {
    startedByTheFile.delete(stop);
    if (ended() || child.pid === undefined) return;
    signal('SIGTERM');
    const timer = setTimeout(() => signal('SIGKILL'), 10_000);
    await done.catch(() => {});
    clearTimeout(timer);
  };
  // Vitest tracks the running test only for tests that run one at a time: a process started by
  // a concurrent test (or in beforeAll, shared by the file's tests) ends with the file instead.
  const test = TestRunner.getCurrentTest();
  if (lifetime === 'test' && test && !test.concurrent) {
    onTestFinished(stop, 20_000);
  } else {
    startedByTheFile.add(stop);
    void done.finally(() => startedByTheFile.delete(stop)).catch(() => {});
  }
}

/**
 * Short commands of one test file run at most this many at a time: tests run concurrently, and
 * a node process per command on every test at once would only make each slower (2 cores).
 */
const MAX_RUNNING = Math.max(2, availableParallelism());
let running = 0;
const queued: (() => void)[] = [];

/** Runs `switchboard ARGS…` to the end and collects its output and exit code. */
export async function runCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  options: { input?: string } = {},
): Promise<CliResult> {
  if (running >= MAX_RUNNING) await new Promise<void>((resolve) => queued.push(resolve));
  running++;
  try {
    return await startCli(args, env, options).done;
  } finally {
    running--;
    queued.shift()?.();
  }
}

/** `--json` output: exactly one JSON document on stdout, nothing else. */
export function parseJson(result: CliResult): any {
  try {
    return JSON.parse(result.stdout);
  } catch {
    throw new Error(
      `stdout is not one JSON document (exit ${result.code}):\n${result.stdout}\nstderr:\n${result.stderr}`,
    );
  }
}

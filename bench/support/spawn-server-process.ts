import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { bundleEntry } from './bundle-entry.js';
import { cpuProfileArgs } from './cpu-profile-args.js';

const ENTRY = fileURLToPath(new URL('./server-process.ts', import.meta.url));
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const START_MS = 60_000;
const EXIT_MS = 10_000;

export interface ServerProcess {
  url: string;
  adminToken: string;
  pid: number;
  /** The CPU time the server has used so far; then it runs a full collection and reports its heap. */
  gc(): Promise<{ memory: NodeJS.MemoryUsage; cpu: NodeJS.CpuUsage }>;
  /** The server's resident set, as the kernel counts it (VmRSS), in bytes. */
  rss(): Promise<number>;
  /** SIGTERM, then waits for it to exit by itself; rejects (after a SIGKILL) if it does not. */
  stop(): Promise<{ code: number | null; ms: number }>;
}

export interface ServerProcessOptions {
  /** Turns POST /api/github/webhooks on, verifying with this secret (off without it). */
  webhookSecret?: string;
  /** The server's log on stderr at this level and above (`warn`, `error`); silent by default. */
  logLevel?: string;
  /** SWITCHBOARD_UNVERIFIED_BODY_MB: webhook bodies held before verification (64 by default). */
  unverifiedBodyMb?: number;
}

/** Starts bench/support/server-process.ts in a child process on `schema` of `databaseUrl`. */
export async function spawnServerProcess(
  databaseUrl: string,
  schema: string,
  options: ServerProcessOptions = {},
): Promise<ServerProcess> {
  const entry = await bundleEntry(ENTRY);
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-bench-server-'));
  const child = spawn(process.execPath, ['--expose-gc', ...cpuProfileArgs(), entry], {
    cwd: PACKAGE_ROOT,
    env: {
      ...process.env,
      BENCH_SERVER_DATABASE_URL: databaseUrl,
      BENCH_SERVER_SCHEMA: schema,
      BENCH_SERVER_DIR: dir,
      BENCH_SERVER_WEBHOOK_SECRET: options.webhookSecret ?? '',
      BENCH_SERVER_LOG_LEVEL: options.logLevel ?? 'silent',
      BENCH_SERVER_UNVERIFIED_BODY_MB: String(options.unverifiedBodyMb ?? ''),
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const nextMessage = async <T>(what: string, ms: number): Promise<T> => {
    const controller = new AbortController();
    try {
      const line = await Promise.race([
        lines.next(),
        exited.then(([code]) => {
          throw new Error(`the server process exited (code ${code}) before ${what}`);
        }),
        sleep(ms, undefined, { signal: controller.signal }).then(() => {
          throw new Error(`the server process gave no ${what} within ${ms} ms`);
        }),
      ]);
      if (line.done) throw new Error(`the server process closed its output before ${what}`);
      return JSON.parse(line.value) as T;
    } finally {
      controller.abort();
    }
  };

  let started: { url: string; adminToken: string; pid: number };
  try {
    started = await nextMessage('address', START_MS);
  } catch (error) {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    ...started,
    async gc() {
      child.stdin.write('gc\n');
      return nextMessage<{ memory: NodeJS.MemoryUsage; cpu: NodeJS.CpuUsage }>('figures', 30_000);
    },
    async rss() {
      const status = await readFile(`/proc/${started.pid}/status`, 'utf8');
      const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
      if (kb === undefined) throw new Error(`no VmRSS in /proc/${started.pid}/status`);
      return Number(kb) * 1024;
    },
    async stop() {
      const begun = performance.now();
      try {
        child.kill('SIGTERM');
        const controller = new AbortController();
        const [code] = await Promise.race([
          exited,
          sleep(EXIT_MS, undefined, { signal: controller.signal }).then(() => {
            child.kill('SIGKILL');
            throw new Error(`the server process did not exit within ${EXIT_MS} ms of SIGTERM`);
          }),
        ]).finally(() => controller.abort());
        if (code !== 0) throw new Error(`the server process exited with code ${code}`);
        return { code, ms: performance.now() - begun };
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}

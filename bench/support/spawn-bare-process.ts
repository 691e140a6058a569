import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { bundleEntry } from './bundle-entry.js';
import { cpuProfileArgs } from './cpu-profile-args.js';
import type { BareServer } from './bare-mcp-server.js';

const ENTRY = fileURLToPath(new URL('./bare-process.ts', import.meta.url));
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const START_MS = 60_000;
const EXIT_MS = 10_000;

export type BareKind = 'mcp' | 'mcp-same-rows' | 'probot' | 'probot-same-rows';

export interface BareProcessOptions {
  /** The Probot apps' webhook secret. */
  secret?: string;
  /** The same-rows Probot app queues each todo's 👀 write-back. */
  writeBack?: boolean;
}

/**
 * Starts a bare reference server (bench/support/bare-process.ts) in a child process, on `schema`
 * of `databaseUrl`, whose tables the caller has made.
 */
export async function spawnBareProcess(
  kind: BareKind,
  databaseUrl: string,
  schema: string,
  { secret = '', writeBack = false }: BareProcessOptions = {},
): Promise<BareServer & { pid: number }> {
  const child = spawn(process.execPath, [...cpuProfileArgs(), await bundleEntry(ENTRY)], {
    cwd: PACKAGE_ROOT,
    env: {
      ...process.env,
      BARE_KIND: kind,
      BARE_DATABASE_URL: databaseUrl,
      BARE_SCHEMA: schema,
      BARE_SECRET: secret,
      BARE_WRITE_BACK: writeBack ? '1' : '',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit') as Promise<[number | null]>;
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const controller = new AbortController();
  let url: string;
  try {
    const line = await Promise.race([
      lines.next(),
      exited.then(([code]) => {
        throw new Error(`the bare ${kind} server exited (code ${code}) before it listened`);
      }),
      sleep(START_MS, undefined, { signal: controller.signal }).then(() => {
        throw new Error(`the bare ${kind} server did not listen within ${START_MS} ms`);
      }),
    ]);
    if (line.done) throw new Error(`the bare ${kind} server closed its output`);
    url = (JSON.parse(line.value) as { url: string }).url;
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  } finally {
    controller.abort();
  }
  return {
    url,
    pid: child.pid!,
    async close() {
      child.kill('SIGTERM');
      const timer = new AbortController();
      await Promise.race([
        exited,
        sleep(EXIT_MS, undefined, { signal: timer.signal }).then(() => child.kill('SIGKILL')),
      ]).finally(() => timer.abort());
    },
  };
}

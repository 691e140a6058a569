// CLI start-up: the wall time of `switchboard todo list --json` against a running server, next to
// `node -e 0` measured in the same run. Agents call the CLI in loops, so its start-up is their
// latency; the target is at most 1.5× a bare node start.
//
//   npm run bench:cli            (BENCH_CLI_RUNS=15, BENCH_DATABASE_URL=… optional)
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { readCredentialsFile } from '../src/platform/config/credentials-file.js';
import type { Benchmark, SummaryRow } from './support/benchmark.js';
import { countFromEnv } from './support/count-from-env.js';
import { targetCell } from './support/format-summary-table.js';
import { describeLoad, loadNote, machineLoad } from './support/machine-load.js';
import { median } from './support/percentile.js';
import { runIfMain } from './support/run-if-main.js';
import { startBenchServer } from './support/start-bench-server.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BIN = join(ROOT, 'bin', 'run.js');
const DEFAULT_RUNS = 15;
const WARMUP_RUNS = 2;
const TODOS = 20;
const TARGET_RATIO = 1.5;

export interface CliStartupResult {
  runs: number;
  /** Milliseconds of each timed run, in the order they ran. */
  nodeMs: number[];
  cliMs: number[];
  nodeMedian: number;
  cliMedian: number;
  ratio: number;
  /** The 1-minute load average when the run started and ended. */
  load: [number, number];
}

/**
 * Starts a server in a schema of its own on `url` (its first start writes a credentials file
 * with an admin token, which the CLI then reads), fills a page of todos, and times both commands
 * alternately so that a busy moment of the machine weighs on both alike.
 */
export async function runCliStartupBenchmark(
  url: string,
  options: { runs?: number } = {},
): Promise<CliStartupResult> {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) {
    throw new Error("the CLI is not built: run 'npm run build' first (npm run bench:cli does)");
  }
  const runs = options.runs ?? countFromEnv('BENCH_CLI_RUNS', DEFAULT_RUNS);
  const loadAtStart = machineLoad();
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-bench-cli-'));
  const configHome = join(dir, 'config');
  const credentialsFile = join(configHome, 'switchboard', 'credentials.json');
  const schema = `bench_cli_${randomBytes(3).toString('hex')}`;
  const server = await startBenchServer({ url, schema, dir, credentialsFile });
  try {
    const env = cliEnv({ XDG_CONFIG_HOME: configHome, XDG_STATE_HOME: join(dir, 'state') });
    const node = [process.execPath, '-e', '0'];
    const cli = [process.execPath, BIN, 'todo', 'list', '--json'];
    await fillQueue(server.url, credentialsFile);

    const nodeMs: number[] = [];
    const cliMs: number[] = [];
    for (let run = -WARMUP_RUNS; run < runs; run++) {
      const baseline = await timeCommand(node, env);
      const measured = await timeCommand(cli, env, (stdout) => {
        const { todos } = JSON.parse(stdout) as { todos: unknown[] };
        if (todos.length !== TODOS)
          throw new Error(`todo list --json listed ${todos.length} todos`);
      });
      if (run < 0) continue;
      nodeMs.push(baseline);
      cliMs.push(measured);
    }
    const nodeMedian = median(nodeMs);
    const cliMedian = median(cliMs);
    return {
      runs,
      nodeMs,
      cliMs,
      nodeMedian,
      cliMedian,
      ratio: cliMedian / nodeMedian,
      load: [loadAtStart, machineLoad()],
    };
  } finally {
    await server.sql`drop schema if exists ${server.sql(schema)} cascade`.catch(() => {});
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The printed result: a markdown table, ready to paste into the README. */
export function formatCliStartupTable(result: CliStartupResult): string {
  const verdict = `${result.ratio.toFixed(2)} (target ≤ ${TARGET_RATIO}×${result.ratio <= TARGET_RATIO ? '' : ', missed'})`;
  return [
    `wall time of one process, start to exit (median of ${result.runs}, alternating runs)`,
    '',
    '| command | median ms | ratio to `node -e 0` |',
    '| --- | ---: | --- |',
    `| \`node -e 0\` | ${Math.round(result.nodeMedian)} | 1.00 |`,
    `| \`switchboard todo list --json\` (${TODOS} todos) | ${Math.round(result.cliMedian)} | ${verdict} |`,
    '',
    describeLoad(...result.load),
  ].join('\n');
}

/** The summary table's row: the CLI against a bare node start, with its target. */
export function cliStartupSummaryRows(result: CliStartupResult): SummaryRow[] {
  return [
    {
      benchmark: 'CLI start-up, `todo list --json`',
      figure: `${Math.round(result.cliMedian)} ms (${loadNote(...result.load)})`,
      baseline: `\`node -e 0\` ${Math.round(result.nodeMedian)} ms`,
      ratio: result.ratio.toFixed(2),
      target: targetCell(`≤ ${TARGET_RATIO}×`, result.ratio <= TARGET_RATIO),
    },
  ];
}

export const cliStartupBenchmark: Benchmark = {
  name: 'cli-startup',
  run: async (url) => {
    const result = await runCliStartupBenchmark(url);
    return { summary: cliStartupSummaryRows(result), details: formatCliStartupTable(result) };
  },
};

/** A page of todos for the CLI to list, created as the admin whose token the first start wrote. */
async function fillQueue(url: string, credentialsFile: string): Promise<void> {
  const { token } = (await readCredentialsFile(credentialsFile))!.servers[url]!;
  for (let i = 1; i <= TODOS; i++) {
    const response = await fetch(`${url}/api/v1/todos`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ queue: 'bench', title: `bench todo ${i}` }),
    });
    if (response.status !== 201) throw new Error(`creating a todo answered ${response.status}`);
  }
}

/** Runs a command to its end and returns its wall time; fails unless it exits 0. */
function timeCommand(
  [file, ...args]: string[],
  env: NodeJS.ProcessEnv,
  check?: (stdout: string) => void,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(file!, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => {
      const ms = performance.now() - started;
      if (code !== 0) return reject(new Error(`${args.join(' ')} exited ${code}: ${stderr}`));
      try {
        check?.(stdout);
      } catch (error) {
        return reject(error instanceof Error ? error : new Error(String(error)));
      }
      resolve(ms);
    });
  });
}

/** Our environment without anything that would point the CLI elsewhere or slow it down. */
function cliEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) =>
        !key.startsWith('SWITCHBOARD_') &&
        !key.startsWith('XDG_') &&
        !['NODE_OPTIONS', 'DEBUG'].includes(key),
    ),
  );
  return { ...env, ...extra };
}

runIfMain(import.meta.url, cliStartupBenchmark);

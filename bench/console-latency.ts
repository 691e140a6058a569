// The web console, end to end: a permission prompt relayed by the real `switchboard channel`
// (driven by a Claude Code stand-in) → its card visible in a page open in headless Chromium,
// against the same prompt's arrival on the JSON event stream of the same human, in the same run;
// and the server's memory per open page stream (the server alone in a child process).
//
//   npm run bench:console          (BENCH_PROMPTS=50, BENCH_PAGES=100, BENCH_DATABASE_URL=… optional)
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { chromium } from 'playwright-core';
import { readCredentialsFile } from '../src/platform/config/credentials-file.js';
import { CHROMIUM_ARGS, findChromium } from '../test/web/support/find-chromium.js';
import { connect } from '../src/platform/db/open-database.js';
import { silentLogger } from '../src/platform/logger.js';
import type { Benchmark, SummaryRow } from './support/benchmark.js';
import { countFromEnv } from './support/count-from-env.js';
import { formatCount } from './support/format-summary-table.js';
import { describeLoad, machineLoad } from './support/machine-load.js';
import { openSseStream } from './support/open-sse-stream.js';
import { distribution, type Distribution } from './support/percentile.js';
import { runIfMain } from './support/run-if-main.js';
import { spawnServerProcess } from './support/spawn-server-process.js';
import { startBenchServer } from './support/start-bench-server.js';

const DEFAULT_PROMPTS = 50;
const WARMUP_PROMPTS = 5;
const DEFAULT_PAGES = 100;
const SETTLE_MS = 3000;
const GAP_MS = 50;
const BIN = join(import.meta.dirname, '..', 'bin', 'run.js');

export interface ConsoleLatencyResult {
  prompts: number;
  /** Prompt sent → its `approval` wake read from the human's JSON event stream (the baseline). */
  stream: Distribution;
  /** Prompt sent → its card inserted into the open page's DOM. */
  dom: Distribution;
  /** Prompt sent → the first animation frame after that: the card on screen. */
  frame: Distribution;
  pages: number;
  /** Resident bytes per open page stream; the server's idle and attached RSS. */
  perPage: number;
  idleRss: number;
  attachedRss: number;
  load: [number, number];
}

export async function runConsoleLatencyBenchmark(
  url: string,
  options: { prompts?: number; pages?: number; settleMs?: number } = {},
): Promise<ConsoleLatencyResult> {
  if (!existsSync(join(import.meta.dirname, '..', 'dist', 'cli', 'main.js')))
    throw new Error('the channel needs the built CLI: run `npm run build` first');
  const prompts = options.prompts ?? countFromEnv('BENCH_PROMPTS', DEFAULT_PROMPTS);
  const pages = options.pages ?? countFromEnv('BENCH_PAGES', DEFAULT_PAGES);
  const loadAtStart = machineLoad();
  const latency = await measureLatency(url, prompts);
  const memory = await measureMemory(url, pages, options.settleMs ?? SETTLE_MS);
  return { prompts, ...latency, pages, ...memory, load: [loadAtStart, machineLoad()] };
}

async function measureLatency(url: string, prompts: number) {
  const schema = `bench_console_${randomBytes(3).toString('hex')}`;
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-bench-console-'));
  const server = await startBenchServer({ url, schema, dir });
  const sql = connect(url, { schema, max: 2, log: silentLogger });
  const browser = await chromium.launch({
    executablePath: (await findChromium()).path,
    args: CHROMIUM_ARGS,
  });
  const closers: (() => Promise<unknown>)[] = [() => browser.close()];
  try {
    const admin = (await readCredentialsFile(join(dir, 'credentials.json')))!.servers[server.url]!
      .token;
    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${server.url}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return (await response.json()) as { token?: string; url?: string };
    };
    const agent = (await api('POST', '/agents', { name: 'bench-agent', queues: ['bench'] })).token!;

    // The baseline consumer: the human's own event stream hears the approval doorbell.
    const streamAt = new Map<string, number>();
    const stream = await openSseStream(server.url, admin, (event, data) => {
      if (event !== 'wake') return;
      const wake = JSON.parse(data) as { type: string; request_id?: string };
      if (wake.type === 'approval' && wake.request_id) streamAt.set(wake.request_id, now());
    });
    closers.push(() => Promise.resolve(stream.close()));

    // The page, signed in, recording when each card enters the DOM and the frame after.
    const page = await (await browser.newContext()).newPage();
    const link = (await api('POST', '/web/sign-in-links')).url!;
    await page.goto(link);
    await page.locator('#live-status', { hasText: /^live$/ }).waitFor();
    // Browser code as text: the project's TypeScript has no DOM types.
    await page.evaluate(`(() => {
      const seen = (window.seen = {});
      new MutationObserver((mutations) => {
        const t = performance.timeOrigin + performance.now();
        for (const mutation of mutations)
          for (const node of mutation.addedNodes) {
            if (!(node instanceof HTMLElement) || !node.matches('article[data-approval]')) continue;
            const key = /Claude Code wants to use (\\S+):/.exec(node.textContent || '')?.[1];
            if (!key || seen[key]) continue;
            seen[key] = { dom: t };
            requestAnimationFrame(() => (seen[key].frame = performance.timeOrigin + performance.now()));
          }
      }).observe(document.getElementById('live'), { childList: true, subtree: true });
    })()`);

    const claude = await startClaude(server.url, agent);
    closers.push(() => claude.close());
    await waitFor(
      async () => (await sql`select 1 from consumer_sessions where path = 'channel'`).length === 1,
    );

    const samples: { stream: number; dom: number; frame: number }[] = [];
    for (let i = 0; i < WARMUP_PROMPTS + prompts; i++) {
      const requestId = requestIdFor(i);
      const tool = `BenchTool${i}`;
      const sent = now();
      await claude.notification({
        method: 'notifications/claude/channel/permission_request',
        params: {
          request_id: requestId,
          tool_name: tool,
          description: 'a benchmark prompt',
          input_preview: '{"command":"true"}',
        },
      });
      let seen: { dom: number; frame?: number } | undefined;
      await waitFor(async () => {
        seen = await page.evaluate<typeof seen>(`window.seen[${JSON.stringify(tool)}]`);
        return streamAt.has(requestId) && seen?.frame !== undefined;
      });
      if (i >= WARMUP_PROMPTS)
        samples.push({
          stream: streamAt.get(requestId)! - sent,
          dom: seen!.dom - sent,
          frame: seen!.frame! - sent,
        });
      // Answered, untimed, so that the list stays as a human's would.
      const [todo] = await sql<
        { id: number }[]
      >`select id from todos where request_id = ${requestId} and state = 'pending'`;
      if (todo) await api('POST', `/todos/${todo.id}/approve`);
      await sleep(GAP_MS);
    }
    return {
      stream: distribution(samples.map((s) => s.stream)),
      dom: distribution(samples.map((s) => s.dom)),
      frame: distribution(samples.map((s) => s.frame)),
    };
  } finally {
    for (const close of closers.reverse()) await close().catch(() => {});
    await server.close();
    await sql`drop schema if exists ${sql(schema)} cascade`.catch(() => {});
    await sql.end({ timeout: 5 });
    await rm(dir, { recursive: true, force: true });
  }
}

/** RSS of a server alone in its process, idle and then with `pages` open page streams. */
async function measureMemory(url: string, pages: number, settleMs: number) {
  const schema = `bench_console_mem_${randomBytes(3).toString('hex')}`;
  const server = await spawnServerProcess(url, schema);
  const sql = connect(url, { schema, max: 2, log: silentLogger });
  const streams: (() => void)[] = [];
  let stopped = false;
  try {
    const link = await fetch(`${server.url}/api/v1/web/sign-in-links`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.adminToken}` },
    });
    const signIn = await fetch(((await link.json()) as { url: string }).url, {
      redirect: 'manual',
    });
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const open = async (count: number) => {
      for (let i = 0; i < count; i++) streams.push(await openPageStream(server.url, cookie));
      await waitFor(
        async () =>
          (await sql<{ n: number }[]>`select count(*)::int as n from consumer_sessions`)[0]!.n ===
          streams.length,
        120_000,
      );
    };
    const read = async () => {
      await sleep(settleMs);
      await server.gc();
      return server.rss();
    };
    // Warm-up: every path a page stream takes runs once before the idle reading.
    await open(10);
    for (const close of streams.splice(0)) close();
    await waitFor(
      async () =>
        (await sql<{ n: number }[]>`select count(*)::int as n from consumer_sessions`)[0]!.n === 0,
    );
    const idleRss = await read();
    await open(pages);
    const attachedRss = await read();
    for (const close of streams.splice(0)) close();
    stopped = true;
    await server.stop();
    return { idleRss, attachedRss, perPage: (attachedRss - idleRss) / pages };
  } finally {
    for (const close of streams) close();
    if (!stopped) await server.stop().catch(() => {});
    await sql`drop schema if exists ${sql(schema)} cascade`.catch(() => {});
    await sql.end({ timeout: 5 });
  }
}

/** `GET /live` as a browser's EventSource opens it, with the session cookie; resolves once open. */
function openPageStream(base: string, cookie: string): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const req = request(new URL('/live?page=%2F&rev=bench', base), {
      headers: { cookie, accept: 'text/event-stream' },
    });
    req.once('error', reject);
    req.once('response', (res) => {
      if (res.statusCode !== 200)
        return reject(new Error(`page stream answered ${res.statusCode}`));
      res.resume();
      resolve(() => req.destroy());
    });
    req.end();
  });
}

async function startClaude(url: string, token: string): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'channel'],
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      SWITCHBOARD_URL: url,
      SWITCHBOARD_TOKEN: token,
    },
    stderr: 'ignore',
  });
  const client = new Client(
    { name: 'claude-code', version: '2.1.81' },
    { capabilities: { roots: {}, elicitation: {} } },
  );
  await client.connect(transport);
  return client;
}

/** Five letters a–z without l, one distinct id per prompt. */
function requestIdFor(i: number): string {
  const letters = 'abcdefghijkmnopqrstuvwxyz';
  let id = '';
  for (let n = i, k = 0; k < 5; k++, n = Math.floor(n / letters.length))
    id += letters[n % letters.length];
  return id;
}

const now = () => performance.timeOrigin + performance.now();

async function waitFor(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the console');
    await sleep(2);
  }
}

export function formatConsoleLatencyTable(result: ConsoleLatencyResult): string {
  const ms = (d: Distribution) =>
    `${d.p50.toFixed(1)} | ${d.p90.toFixed(1)} | ${d.p99.toFixed(1)} | ${d.max.toFixed(1)}`;
  return [
    `${result.prompts} permission prompts relayed by \`switchboard channel\`, one at a time, to one human with one page open in headless Chromium`,
    '',
    '| from the prompt sent to … | p50 ms | p90 ms | p99 ms | max ms |',
    '| --- | ---: | ---: | ---: | ---: |',
    `| its \`approval\` wake on the human's JSON event stream (baseline) | ${ms(result.stream)} |`,
    `| its card in the page's DOM | ${ms(result.dom)} |`,
    `| its card on screen (the next animation frame) | ${ms(result.frame)} |`,
    '',
    `${result.pages} open page streams (\`GET /live\`, one human): ${(result.perPage / 1024).toFixed(1)} KiB each ` +
      `(server RSS ${(result.idleRss / 2 ** 20).toFixed(1)} → ${(result.attachedRss / 2 ** 20).toFixed(1)} MiB)`,
    describeLoad(...result.load),
  ].join('\n');
}

export function consoleLatencySummaryRows(result: ConsoleLatencyResult): SummaryRow[] {
  const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  return [
    {
      benchmark: 'web console, relayed prompt → card on screen in Chromium',
      figure: `p50 ${result.frame.p50.toFixed(1)} ms, p99 ${result.frame.p99.toFixed(1)} ms`,
      baseline: `the same prompt on the event stream p50 ${result.stream.p50.toFixed(1)} ms, p99 ${result.stream.p99.toFixed(1)} ms`,
      ratio: (result.frame.p50 / result.stream.p50).toFixed(2),
      target: '—',
    },
    {
      benchmark: `idle memory, ${formatCount(result.pages)} console page streams`,
      figure: `${(result.perPage / 1024).toFixed(1)} KiB each (RSS ${mib(result.idleRss)} → ${mib(result.attachedRss)} MiB)`,
      baseline: `the idle server, ${mib(result.idleRss)} MiB`,
      ratio: (result.attachedRss / result.idleRss).toFixed(2),
      target: '—',
    },
  ];
}

export const consoleLatencyBenchmark: Benchmark = {
  name: 'web console',
  run: async (url) => {
    const result = await runConsoleLatencyBenchmark(url);
    return {
      summary: consoleLatencySummaryRows(result),
      details: formatConsoleLatencyTable(result),
    };
  },
};

runIfMain(import.meta.url, consoleLatencyBenchmark);

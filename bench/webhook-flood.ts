// The server's memory under a flood of webhook bodies with bad signatures, sent by nobody: ten
// 24 MB bodies at once (issue 19: they raised the server from 145 MB to 434 MB). Measured on a
// server with the default budget of unverified bodies (SWITCHBOARD_UNVERIFIED_BODY_MB, 64) and,
// in the same run, on one whose budget is so large that it never refuses: the server before it.
//
//   npm run bench:flood            (BENCH_FLOOD_BODIES=10, BENCH_FLOOD_MB=24, BENCH_DATABASE_URL=… optional)
import { randomBytes, randomUUID } from 'node:crypto';
import { connect } from '../src/platform/db/open-database.js';
import { silentLogger } from '../src/platform/logger.js';
import type { Benchmark, SummaryRow } from './support/benchmark.js';
import { countFromEnv } from './support/count-from-env.js';
import { describeLoad, machineLoad } from './support/machine-load.js';
import { runIfMain } from './support/run-if-main.js';
import { spawnServerProcess } from './support/spawn-server-process.js';

const DEFAULT_BODIES = 10;
const DEFAULT_MB = 24;
const SECRET = 'bench-webhook-secret';
/** How often the server's resident set is read while the bodies arrive. */
const SAMPLE_MS = 20;
/** A budget no flood reaches: the server as it was before the budget. */
const UNBOUNDED_MB = 65_536;

export interface FloodRow {
  label: string;
  budgetMb: number;
  /** RSS after a full collection, before the flood. */
  idleRss: number;
  /** The highest RSS read while the bodies arrived and were answered. */
  peakRss: number;
  /** How many were answered with each status (401: read and refused; 503: refused unread). */
  statuses: Record<string, number>;
}

export interface FloodResult {
  bodies: number;
  megabytes: number;
  load: [number, number];
  rows: FloodRow[];
}

export async function runWebhookFloodBenchmark(
  url: string,
  options: { bodies?: number; megabytes?: number; budgets?: [string, number][] } = {},
): Promise<FloodResult> {
  const bodies = options.bodies ?? countFromEnv('BENCH_FLOOD_BODIES', DEFAULT_BODIES);
  const megabytes = options.megabytes ?? countFromEnv('BENCH_FLOOD_MB', DEFAULT_MB);
  const loadAtStart = machineLoad();
  const rows: FloodRow[] = [];
  for (const [label, budgetMb] of options.budgets ?? [
    ['no budget', UNBOUNDED_MB],
    ['the default budget', 64],
  ]) {
    rows.push(await flood(url, label, budgetMb, bodies, megabytes));
  }
  return { bodies, megabytes, load: [loadAtStart, machineLoad()], rows };
}

async function flood(
  url: string,
  label: string,
  budgetMb: number,
  bodies: number,
  megabytes: number,
): Promise<FloodRow> {
  const schema = `bench_flood_${randomBytes(3).toString('hex')}`;
  const server = await spawnServerProcess(url, schema, {
    webhookSecret: SECRET,
    unverifiedBodyMb: budgetMb,
  });
  try {
    await server.gc();
    const idleRss = await server.rss();
    let peakRss = idleRss;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peakRss = Math.max(peakRss, await server.rss());
        await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
      }
    })();
    const body = Buffer.alloc(megabytes * 1024 * 1024, ' ');
    const answers = await Promise.all(
      Array.from({ length: bodies }, () =>
        fetch(`${server.url}/api/github/webhooks`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-github-event': 'issues',
            'x-github-delivery': randomUUID(),
            'x-hub-signature-256': `sha256=${'0'.repeat(64)}`,
          },
          body,
        }).then(
          async (response) => {
            await response.body?.cancel();
            return String(response.status);
          },
          () => 'cut off',
        ),
      ),
    );
    sampling = false;
    await sampler;
    const statuses: Record<string, number> = {};
    for (const status of answers) statuses[status] = (statuses[status] ?? 0) + 1;
    return { label, budgetMb, idleRss, peakRss, statuses };
  } finally {
    await server.stop().catch(() => {});
    const sql = connect(url, { schema, max: 1, log: silentLogger });
    await sql`drop schema if exists ${sql(schema)} cascade`.catch(() => {});
    await sql.end({ timeout: 5 });
  }
}

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

export function formatFloodTable(result: FloodResult): string {
  return [
    `${result.bodies} webhook bodies of ${result.megabytes} MB at once, each with a bad signature; ` +
      'the server in its own process, its RSS read every 20 ms',
    '',
    '| server | idle RSS MiB | peak RSS MiB | growth MiB | answers |',
    '| --- | ---: | ---: | ---: | --- |',
    ...result.rows.map(
      (row) =>
        `| ${row.label} (${row.budgetMb === UNBOUNDED_MB ? 'unbounded' : `${row.budgetMb} MB`}) | ${mib(row.idleRss)} | ${mib(row.peakRss)} | ${mib(row.peakRss - row.idleRss)} | ${Object.entries(
          row.statuses,
        )
          .map(([status, count]) => `${count}× ${status}`)
          .join(', ')} |`,
    ),
    '',
    describeLoad(...result.load),
  ].join('\n');
}

export function floodSummaryRows(result: FloodResult): SummaryRow[] {
  const [before, budget] = result.rows as [FloodRow, FloodRow];
  const growth = (row: FloodRow) => row.peakRss - row.idleRss;
  return [
    {
      benchmark: `${result.bodies} concurrent ${result.megabytes} MB webhook bodies, bad signatures`,
      figure: `RSS +${mib(growth(budget))} MiB (64 MB budget)`,
      baseline: `no budget: +${mib(growth(before))} MiB`,
      ratio: (growth(budget) / growth(before)).toFixed(2),
      target: '—',
    },
  ];
}

export const webhookFloodBenchmark: Benchmark = {
  name: 'webhook flood',
  async run(url) {
    const result = await runWebhookFloodBenchmark(url);
    return { summary: floodSummaryRows(result), details: formatFloodTable(result) };
  },
};

runIfMain(import.meta.url, webhookFloodBenchmark);

// Sustained load: a real server in a child process takes signed GitHub deliveries at a steady
// rate for a minute, while 8 workers claim and complete the todos they make over the JSON API
// and one consumer listens for wakes on the event stream. It reports throughput, ingest response
// times, wake latency, the server's resident set over the run and its trend, and every todo
// lost or doubled — of which there must be none: the run fails otherwise.
//
//   npm run load           (LOAD_SECONDS=60, LOAD_RATE=50, BENCH_DATABASE_URL=… optional)
//
// Not part of `npm run bench`: it is long, and it checks an invariant rather than a speed.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { sign } from '@octokit/webhooks-methods';
import { connect } from '../src/platform/db/open-database.js';
import { silentLogger } from '../src/platform/logger.js';
import { startBenchDatabase } from './support/bench-database.js';
import { countFromEnv } from './support/count-from-env.js';
import { formatCount } from './support/format-summary-table.js';
import { linearSlope } from './support/linear-slope.js';
import { describeLoad, machineLoad } from './support/machine-load.js';
import { openSseStream } from './support/open-sse-stream.js';
import { distribution, type Distribution } from './support/percentile.js';
import { isMain } from './support/run-if-main.js';
import { spawnServerProcess, type ServerProcess } from './support/spawn-server-process.js';

const DEFAULT_SECONDS = 60;
/** Deliveries per second: what the 2-core development machine sustains with room to spare. */
const DEFAULT_RATE = 50;
/** At the same rate before the measured window: the server's pool grows and its code warms up. */
const DEFAULT_WARMUP_SECONDS = 5;
const WORKERS = 8;
const QUEUE = 'issues';
const SECRET = 'load-webhook-secret';
const RSS_EVERY_MS = 2000;
/** After the last delivery, the workers have this long to finish what is left. */
const DRAIN_MS = 60_000;
/** An idle worker claims again after this even without a wake (a wake skipped or lost). */
const IDLE_POLL_MS = 1000;
/** A delivery not answered within this counts as refused (GitHub itself gives up at 10 s). */
const ANSWER_MS = 30_000;
/** A `/switchboard` command comment: every delivery is routed, trusted and makes one todo. */
const FIXTURE = new URL(
  '../test/fixtures/github/issue_comment.created.command.json',
  import.meta.url,
);

interface CommentPayload {
  issue: { html_url: string };
  comment: { id: number; url: string; html_url: string; body: string };
}

/** One delivery: sent at `sentAt`, answered with `status` (0: no answer) at `answeredAt`. */
interface Delivery {
  id: string;
  commentId: number;
  marker: string;
  warmup: boolean;
  sentAt: number;
  answeredAt?: number;
  status?: number;
}

/** A delivery's row in the ledger, with the todo it made. */
interface DeliveryRow {
  delivery_id: string;
  disposition: string;
  todo_id: number | null;
  state: string | null;
  body: string | null;
  comment_id: string | null;
  todo_delivery_id: string | null;
}

export interface LoadResult {
  seconds: number;
  warmupSeconds: number;
  /** Deliveries per second asked for. */
  rate: number;
  workers: number;
  /** Every delivery, warm-up included. */
  sent: number;
  accepted: number;
  /** Answers other than 2xx, by status (0: none within ANSWER_MS, or the connection failed). */
  refused: Record<string, number>;
  /** The measured window (after the warm-up), in seconds: first send to last answer. */
  windowSeconds: number;
  acceptedPerSecond: number;
  completedPerSecond: number;
  /** The latest a delivery went out after its scheduled time, in ms: the sender keeping up. */
  maxSendLagMs: number;
  /** Ingest response time of the window's deliveries, ms from the request to the answer read. */
  ingest: Distribution;
  /** From a delivery's answer to its todo's wake on the event stream, ms (window only). */
  wake: Distribution | null;
  /** The window's accepted deliveries whose todo was rung; the rest were claimed first. */
  woken: number;
  /** Wakes received over the whole run, warm-up included; of which for a todo rung before. */
  rings: number;
  rerings: number;
  /** Todos still open (pending or claimed) when the last delivery was answered. */
  backlog: number;
  drainMs: number;
  rss: {
    /** [seconds since the window began, bytes]; negative seconds are the warm-up. */
    samples: [number, number][];
    start: number;
    end: number;
    peak: number;
    /** Least-squares slope over the window, MiB per minute; and over its second half. */
    slopeMiBPerMinute: number;
    secondHalfSlopeMiBPerMinute: number;
  };
  /** The V8 heap after a full collection, idle before the run and idle after it, bytes. */
  heap: { before: number; after: number };
  /** The server's CPU time over the whole run (warm-up and drain included), ms. */
  serverCpuMs: number;
  /** The same for this process: the senders, the workers and the consumer. */
  loadCpuMs: number;
  /** The whole run's wall time from the first delivery to the end of the drain, ms. */
  runMs: number;
  /** Answered 2xx but no todo of their own; their todo never completed. */
  lost: { noTodo: number; notCompleted: number };
  /** Two todos for one delivery; a todo completed twice; a todo claimed twice. */
  doubled: { todos: number; completions: number; claims: number };
  /** Todos whose delivery was not answered 2xx (stored anyway: the sender would redeliver). */
  storedButRefused: number;
  /** Claims and completions the API refused; first message of each kind. */
  workerErrors: string[];
  load: [number, number];
}

/**
 * Starts the server in a child process (WEBHOOK_SECRET set) on a schema of its own, attaches one
 * wake consumer and 8 workers, sends `rate` signed deliveries a second for the warm-up and
 * `seconds`, lets the workers drain what is left, and checks every delivery against the ledger.
 */
export async function runLoad(
  url: string,
  options: { seconds?: number; rate?: number; warmupSeconds?: number } = {},
): Promise<LoadResult> {
  const seconds = options.seconds ?? countFromEnv('LOAD_SECONDS', DEFAULT_SECONDS);
  const rate = options.rate ?? countFromEnv('LOAD_RATE', DEFAULT_RATE);
  const warmupSeconds = options.warmupSeconds ?? DEFAULT_WARMUP_SECONDS;
  const loadAtStart = machineLoad();
  const runId = randomBytes(3).toString('hex');
  const schema = `bench_load_${runId}`;
  const fixture = JSON.parse(await readFile(FIXTURE, 'utf8')) as CommentPayload;

  const server = await spawnServerProcess(url, schema, {
    webhookSecret: SECRET,
    logLevel: 'warn',
  });
  const sql = connect(url, { schema, max: 2, log: silentLogger });
  const undo: (() => unknown)[] = [];
  try {
    const workerToken = await createAgent(server, 'load-worker');
    const listenerToken = await createAgent(server, 'load-listener');

    // Idle workers wait here; each wake lets one of them claim.
    const idle = createIdleWorkers();
    const wakes = new Map<number, number>();
    let rings = 0;
    const listener = await openSseStream(server.url, listenerToken, (event, data) => {
      const at = performance.now();
      if (event !== 'wake') return;
      const wake = JSON.parse(data) as { type?: unknown; event?: unknown; todo_id?: unknown };
      if (wake.type !== 'wake' || wake.event !== 'claimable' || typeof wake.todo_id !== 'number')
        return;
      rings++;
      if (!wakes.has(wake.todo_id)) wakes.set(wake.todo_id, at);
      idle.wakeOne();
    });
    undo.push(() => listener.close());

    const before = await server.gc();
    const ownCpuBefore = process.cpuUsage();

    // The workers: claim the oldest pending todo over the API, complete it, again; when the
    // queue is empty, wait for a wake (or IDLE_POLL_MS).
    const completions = new Map<number, number>();
    const completedAt: number[] = [];
    const workerErrors = new Map<string, number>();
    const workerError = (what: string, status: number, body: unknown) => {
      const key = `${what} answered ${status}: ${JSON.stringify(body).slice(0, 200)}`;
      workerErrors.set(key, (workerErrors.get(key) ?? 0) + 1);
    };
    let stopping = false;
    const work = async () => {
      while (!stopping) {
        const claimed = await callApi(server.url, workerToken, `/api/v1/queues/${QUEUE}/claim`, {});
        const todo = (claimed.body as { todo?: { id: number; lease_token: string } | null }).todo;
        if (claimed.status !== 200 || !todo) {
          if (claimed.status !== 200) workerError('claim', claimed.status, claimed.body);
          await idle.wait(IDLE_POLL_MS);
          continue;
        }
        const completed = await callApi(
          server.url,
          workerToken,
          `/api/v1/todos/${todo.id}/complete`,
          { lease_token: todo.lease_token, summary: 'done under load' },
        );
        if (completed.status !== 200) {
          workerError('complete', completed.status, completed.body);
          continue;
        }
        completions.set(todo.id, (completions.get(todo.id) ?? 0) + 1);
        completedAt.push(performance.now());
      }
    };
    const workers = Array.from({ length: WORKERS }, () =>
      work().catch((error: unknown) => {
        workerError('worker', 0, error instanceof Error ? error.message : String(error));
      }),
    );
    undo.push(async () => {
      stopping = true;
      idle.wakeAll();
      await Promise.all(workers);
    });

    // The resident set, every RSS_EVERY_MS from the first delivery to the last answer.
    const samples: [number, number][] = [];
    const runStarted = performance.now();
    const windowStarted = runStarted + warmupSeconds * 1000;
    const sampleRss = async () => {
      const at = performance.now();
      samples.push([(at - windowStarted) / 1000, await server.rss()]);
    };
    await sampleRss();
    const sampler = setInterval(() => void sampleRss().catch(() => {}), RSS_EVERY_MS);
    undo.push(() => clearInterval(sampler));

    // The deliveries, open loop: each goes out at its time whether or not earlier ones were
    // answered, as GitHub's would.
    const total = Math.round((warmupSeconds + seconds) * rate);
    const warmupCount = Math.round(warmupSeconds * rate);
    const deliveries: Delivery[] = [];
    const inFlight = new Set<Promise<void>>();
    let maxSendLagMs = 0;
    for (let n = 0; n < total; n++) {
      const due = runStarted + (n * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      maxSendLagMs = Math.max(maxSendLagMs, performance.now() - due);
      const delivery: Delivery = {
        id: randomUUID(),
        commentId: fixture.comment.id + 1 + n,
        marker: `(load ${runId} #${n})`,
        warmup: n < warmupCount,
        sentAt: 0,
      };
      deliveries.push(delivery);
      const sending = send(server.url, fixture, delivery);
      inFlight.add(sending);
      void sending.finally(() => inFlight.delete(sending));
    }
    await Promise.all(inFlight);
    clearInterval(sampler);
    // The last reading at the last answer, unless the sampler has just taken one.
    if (performance.now() - windowStarted - samples[samples.length - 1]![0] * 1000 > 500)
      await sampleRss();

    const openTodos = async () =>
      (
        await sql<[{ n: number }]>`
          select count(*)::int as n from todos where state in ('pending', 'claimed')`
      )[0].n;
    const backlog = await openTodos();
    const drainStarted = performance.now();
    while ((await openTodos()) > 0 && performance.now() - drainStarted < DRAIN_MS) await sleep(100);
    const drainMs = performance.now() - drainStarted;
    stopping = true;
    idle.wakeAll();
    await Promise.all(workers);
    const runMs = performance.now() - runStarted;
    const ownCpu = process.cpuUsage(ownCpuBefore);
    const after = await server.gc();

    // Every delivery against the ledger: its row, its todo (the right one), the todo's end.
    const rows = await sql<DeliveryRow[]>`
      select d.delivery_id, d.disposition, d.todo_id, t.state, t.body,
             t.meta->'github'->>'comment_id' as comment_id,
             t.meta->'github'->>'delivery_id' as todo_delivery_id
      from deliveries d left join todos t on t.id = d.todo_id
      where d.source = 'github' and d.disposition <> 'duplicate'`;
    const rowsByDelivery = new Map<string, DeliveryRow[]>();
    for (const row of rows)
      rowsByDelivery.set(row.delivery_id, [...(rowsByDelivery.get(row.delivery_id) ?? []), row]);
    const [counts] = await sql<
      [{ doubled_todos: number; doubled_completions: number; doubled_claims: number }]
    >`
      select
        (select coalesce(sum(n - 1), 0)::int from (
          select count(*) as n from todos where source = 'github'
          group by meta->'github'->>'delivery_id' having count(*) > 1) d) as doubled_todos,
        (select count(*)::int from (
          select todo_id from todo_events where action = 'completed'
          group by todo_id having count(*) > 1) c) as doubled_completions,
        (select count(*)::int from (
          select todo_id from todo_events where action = 'claimed'
          group by todo_id having count(*) > 1) c) as doubled_claims`;

    const isAccepted = (d: Delivery) => d.status !== undefined && d.status >= 200 && d.status < 300;
    const lost = { noTodo: 0, notCompleted: 0 };
    let doubledTodos = counts.doubled_todos;
    let storedButRefused = 0;
    const todoOf = new Map<string, number>();
    const refused: Record<string, number> = {};
    for (const delivery of deliveries) {
      const found = rowsByDelivery.get(delivery.id) ?? [];
      if (found.length > 1) doubledTodos += found.length - 1;
      const row = found[0];
      const own =
        row?.todo_id != null &&
        row.state !== null &&
        row.todo_delivery_id === delivery.id &&
        row.comment_id === String(delivery.commentId) &&
        (row.body ?? '').includes(delivery.marker);
      if (!isAccepted(delivery)) {
        refused[String(delivery.status ?? 0)] = (refused[String(delivery.status ?? 0)] ?? 0) + 1;
        if (row?.todo_id != null) storedButRefused++;
        continue;
      }
      if (!own) {
        lost.noTodo++;
        continue;
      }
      todoOf.set(delivery.id, row.todo_id!);
      if (row.state !== 'done') lost.notCompleted++;
    }
    const clientDoubled = [...completions.values()].filter((count) => count > 1).length;

    const measured = deliveries.filter((d) => !d.warmup && isAccepted(d));
    const windowEnded = Math.max(...measured.map((d) => d.answeredAt!), windowStarted);
    const windowSeconds = (windowEnded - windowStarted) / 1000;
    const wakeLatencies = measured.flatMap((d) => {
      const at = wakes.get(todoOf.get(d.id) ?? -1);
      return at === undefined ? [] : [at - d.answeredAt!];
    });
    const mib = (bytes: number) => bytes / 2 ** 20;
    const inWindow = samples.filter(([t]) => t >= 0).map(([t, rss]) => [t / 60, mib(rss)] as const);
    const half = inWindow.length > 0 ? inWindow[inWindow.length - 1]![0] / 2 : 0;
    const cpuMs = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1000;

    return {
      seconds,
      warmupSeconds,
      rate,
      workers: WORKERS,
      sent: deliveries.length,
      accepted: deliveries.filter(isAccepted).length,
      refused,
      windowSeconds,
      acceptedPerSecond: measured.length / windowSeconds,
      completedPerSecond:
        completedAt.filter((at) => at >= windowStarted && at <= windowEnded).length / windowSeconds,
      maxSendLagMs,
      ingest: distribution(measured.map((d) => d.answeredAt! - d.sentAt)),
      wake: wakeLatencies.length ? distribution(wakeLatencies) : null,
      woken: wakeLatencies.length,
      rings,
      rerings: rings - wakes.size,
      backlog,
      drainMs,
      rss: {
        samples,
        start: (samples.find(([t]) => t >= 0) ?? samples[0]!)[1],
        end: samples[samples.length - 1]![1],
        peak: Math.max(...samples.map(([, rss]) => rss)),
        slopeMiBPerMinute: linearSlope(inWindow),
        secondHalfSlopeMiBPerMinute: linearSlope(inWindow.filter(([t]) => t >= half)),
      },
      heap: { before: before.memory.heapUsed, after: after.memory.heapUsed },
      serverCpuMs: cpuMs(after.cpu) - cpuMs(before.cpu),
      loadCpuMs: cpuMs(ownCpu),
      runMs,
      lost,
      doubled: {
        todos: doubledTodos,
        completions: Math.max(counts.doubled_completions, clientDoubled),
        claims: counts.doubled_claims,
      },
      storedButRefused,
      workerErrors: [...workerErrors].map(([message, count]) => `${count}× ${message}`),
      load: [loadAtStart, machineLoad()],
    };
  } finally {
    for (const step of undo.reverse()) {
      try {
        await step();
      } catch {
        // tearing down: the next step still runs
      }
    }
    await server.stop().catch((error: unknown) => console.error(error));
    await sql`drop schema if exists ${sql(schema)} cascade`.catch(() => {});
    await sql.end({ timeout: 5 });
  }
}

/** Lost plus doubled: anything but 0 fails the run. */
export function loadFailures(result: LoadResult): number {
  return (
    result.lost.noTodo +
    result.lost.notCompleted +
    result.doubled.todos +
    result.doubled.completions +
    result.doubled.claims
  );
}

/** The printed result: a markdown table, ready to paste into the README. */
export function formatLoadTable(result: LoadResult): string {
  const ms = (value: number) => value.toFixed(1);
  const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  const slope = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(2)} MiB/min`;
  const refusedCount = Object.values(result.refused).reduce((sum, n) => sum + n, 0);
  const refused = refusedCount
    ? Object.entries(result.refused)
        .map(([status, n]) => `${n}× ${status === '0' ? 'no answer' : status}`)
        .join(', ')
    : 'none';
  const lost = result.lost.noTodo + result.lost.notCompleted;
  const doubled = result.doubled.todos + result.doubled.completions + result.doubled.claims;
  const measured = Math.round(result.acceptedPerSecond * result.windowSeconds);
  const cpuSeconds = result.serverCpuMs / 1000;
  // At most 16 readings on the line, evenly spread, the last always among them.
  const step = Math.max(1, Math.ceil(result.rss.samples.length / 16));
  const readings = result.rss.samples
    .filter(
      (_, i, all) => (i % step === 0 && i + step / 2 < all.length - 1) || i === all.length - 1,
    )
    .map(([t, rss]) => `${Math.round(t)} s ${mib(rss)}`)
    .join(', ');
  return [
    `${result.seconds} s at ${result.rate} signed deliveries/s (after ${result.warmupSeconds} s of warm-up at the same rate), ` +
      `${result.workers} workers claiming and completing over the JSON API, one event-stream consumer; ` +
      'the server alone in a child process',
    describeLoad(...result.load),
    '',
    '| measure | figure |',
    '| --- | --- |',
    `| deliveries | ${formatCount(result.sent)} sent, ${formatCount(result.accepted)} answered 2xx; refused: ${refused} |`,
    `| throughput (window of ${result.windowSeconds.toFixed(1)} s) | ${result.acceptedPerSecond.toFixed(1)} deliveries accepted/s, ${result.completedPerSecond.toFixed(1)} todos completed/s |`,
    `| ingest response time | p50 ${ms(result.ingest.p50)} ms, p90 ${ms(result.ingest.p90)} ms, p99 ${ms(result.ingest.p99)} ms, max ${ms(result.ingest.max)} ms |`,
    `| wake latency (delivery answered → wake received) | ${
      result.wake
        ? `p50 ${ms(result.wake.p50)} ms, p90 ${ms(result.wake.p90)} ms, p99 ${ms(result.wake.p99)} ms, max ${ms(result.wake.max)} ms`
        : '—'
    }; ${formatCount(result.woken)} of ${formatCount(measured)} todos rung (the rest claimed before their ring); ${formatCount(result.rings)} wakes over the whole run, ${formatCount(result.rerings)} of them re-rings |`,
    `| backlog | ${formatCount(result.backlog)} open todos when the last delivery was answered; drained in ${Math.round(result.drainMs)} ms |`,
    `| server RSS | ${mib(result.rss.start)} MiB at the window's start, ${mib(result.rss.end)} MiB at its end, peak ${mib(result.rss.peak)} MiB |`,
    `| server RSS trend (least squares, every ${RSS_EVERY_MS / 1000} s) | ${slope(result.rss.slopeMiBPerMinute)} over the window, ${slope(result.rss.secondHalfSlopeMiBPerMinute)} over its second half |`,
    `| server V8 heap after a full GC, idle | ${mib(result.heap.before)} MiB before, ${mib(result.heap.after)} MiB after |`,
    `| server CPU | ${cpuSeconds.toFixed(1)} s over ${(result.runMs / 1000).toFixed(1)} s (${Math.round((100 * cpuSeconds * 1000) / result.runMs)} % of one core), ${(result.serverCpuMs / Math.max(1, result.accepted)).toFixed(2)} ms per delivery and its todo; the load's own process (senders, workers, consumer) ${(result.loadCpuMs / 1000).toFixed(1)} s |`,
    `| **lost** (answered 2xx, but no todo / never completed) | **${lost}** (${result.lost.noTodo} / ${result.lost.notCompleted}) |`,
    `| **doubled** (two todos for one delivery / completed twice / claimed twice) | **${doubled}** (${result.doubled.todos} / ${result.doubled.completions} / ${result.doubled.claims}) |`,
    '',
    `RSS MiB (s from the window's start): ${readings}`,
    `latest a delivery went out after its time: ${ms(result.maxSendLagMs)} ms` +
      (result.storedButRefused
        ? `; ${result.storedButRefused} refused deliveries were stored anyway`
        : ''),
    ...(result.workerErrors.length
      ? ['', 'worker errors:', ...result.workerErrors.map((e) => `- ${e}`)]
      : []),
  ].join('\n');
}

/** Signs a unique copy of the fixture and POSTs it as GitHub would; records the answer. */
async function send(baseUrl: string, fixture: CommentPayload, delivery: Delivery): Promise<void> {
  const body = uniquePayload(fixture, delivery);
  const signature = await sign(SECRET, body);
  delivery.sentAt = performance.now();
  try {
    const response = await fetch(`${baseUrl}/api/github/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issue_comment',
        'x-github-delivery': delivery.id,
        'x-hub-signature-256': signature,
      },
      body,
      signal: AbortSignal.timeout(ANSWER_MS),
    });
    await response.text();
    delivery.status = response.status;
  } catch {
    delivery.status = 0;
  }
  delivery.answeredAt = performance.now();
}

/**
 * The fixture as another comment: its own comment id and URLs, and a marker on the command's
 * first line (so in the todo's title and body), which the checks look for in the todo.
 */
function uniquePayload(fixture: CommentPayload, delivery: Delivery): string {
  const [firstLine, ...rest] = fixture.comment.body.split('\n');
  const payload: CommentPayload = {
    ...fixture,
    comment: {
      ...fixture.comment,
      id: delivery.commentId,
      url: fixture.comment.url.replace(/\d+$/, String(delivery.commentId)),
      html_url: `${fixture.issue.html_url}#issuecomment-${delivery.commentId}`,
      body: [`${firstLine!} ${delivery.marker}`, ...rest].join('\n'),
    },
  };
  return `${JSON.stringify(payload, null, 2)}\n`;
}

async function callApi(
  baseUrl: string,
  token: string,
  path: string,
  body: unknown,
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: kept as text for the error message
  }
  return { status: response.status, body: parsed };
}

async function createAgent(server: ServerProcess, name: string): Promise<string> {
  const { status, body } = await callApi(server.url, server.adminToken, '/api/v1/agents', {
    name,
    queues: [QUEUE],
  });
  const token = (body as { token?: unknown }).token;
  if (status !== 201 || typeof token !== 'string')
    throw new Error(`creating agent ${name} answered ${status}`);
  return token;
}

/** Idle workers, each waiting for a wake (one worker per wake) or its own timeout. */
function createIdleWorkers() {
  const waiting: (() => void)[] = [];
  return {
    wait(ms: number): Promise<void> {
      return new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer);
          const index = waiting.indexOf(done);
          if (index >= 0) waiting.splice(index, 1);
          resolve();
        };
        const timer = setTimeout(done, ms);
        waiting.push(done);
      });
    },
    wakeOne() {
      waiting[0]?.();
    },
    wakeAll() {
      for (const done of [...waiting]) done();
    },
  };
}

if (isMain(import.meta.url)) {
  void (async () => {
    const database = await startBenchDatabase();
    try {
      const result = await runLoad(database.url);
      console.log(formatLoadTable(result));
      const failures = loadFailures(result);
      if (failures > 0) {
        console.error(`load: ${failures} todos lost or doubled — this must be 0`);
        process.exitCode = 1;
      }
    } finally {
      await database.stop();
    }
  })().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}

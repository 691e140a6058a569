// Wake latency end to end: a todo committed → its wake received by a real MCP client (and by an
// event-stream consumer), next to graphile-worker's addJob → task start on the same database, in
// the same run; and a todo made by a signed delivery — a GitHub one, to Claude Code through the
// real `switchboard channel`, beside a source's (Gitea), to an event stream — from the POST to its
// wake. The delivery's reference is the same delivery taken by a bare Probot app (one statement,
// bench/support/bare-probot-app.ts) plus graphile-worker's addJob → start: what the protocol
// alone costs. Every event is sequential: one write, then wait until it is heard.
//
//   npm run bench:wake             (BENCH_EVENTS=300, BENCH_DATABASE_URL=… optional)
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger, makeWorkerUtils, run, runMigrations } from 'graphile-worker';
import type postgres from 'postgres';
import { connect } from '../src/platform/db/open-database.js';
import { DEFAULT_TIMING } from '../src/wakes/create-dispatcher.js';
import { takeRing } from '../src/wakes/take-ring.js';
import {
  actorFor,
  claimTodo,
  completeTodo,
  createAgent,
  createHuman,
  createTodo,
  issueToken,
  systemActor,
  wakeChannel,
  type Actor,
  type Wake,
} from '../src/data/index.js';
import { silentLogger } from '../src/platform/logger.js';
import { providerFor } from '../src/providers/by-kind/provider-for.js';
import { parseRules } from '../src/providers/rule-schema.js';
import { createSecretBox } from '../src/platform/secrets/secret-box.js';
import { addSource, saveSourceRules } from '../src/data/sources/source-store.js';
import { defaultSourceRules } from '../src/providers/by-kind/source-rules.js';
import type { Benchmark, SummaryRow } from './support/benchmark.js';
import { countFromEnv } from './support/count-from-env.js';
import { targetCell } from './support/format-summary-table.js';
import { createBareIntakeTables, startBareProbotApp } from './support/bare-probot-app.js';
import { runIfMain } from './support/run-if-main.js';
import { connectChannelConsumer } from './support/connect-channel-consumer.js';
import { connectMcpConsumer } from './support/connect-mcp-consumer.js';
import { openSseStream } from './support/open-sse-stream.js';
import { describeLoad, loadNote, machineLoad } from './support/machine-load.js';
import { distribution, type Distribution } from './support/percentile.js';
import { startBenchServer } from './support/start-bench-server.js';

const DEFAULT_EVENTS = 300;
const WARMUP_EVENTS = 30;
/** takeRing is timed alone on this many extra todos. */
const TAKE_RING_SAMPLES = 100;
/**
 * A pause between events, so that what each leaves running in the background (the server's
 * `rung` record, graphile-worker's job completion) does not land inside the next measurement.
 */
const GAP_MS = 10;
/** A wake not heard within this fails the run: pushes must not be lost. */
const WAIT_MS = 10_000;
/**
 * A wake's p50 at most 1.5× its reference's and its p99 at most 25 ms: create → MCP against
 * graphile-worker's addJob → start, and webhook → channel against the bare Probot app's answer
 * plus graphile-worker's addJob → start.
 */
const P50_TARGET_RATIO = 1.5;
const P99_TARGET_MS = 25;
const DELIVERY_P50_TARGET_RATIO = P50_TARGET_RATIO;
const DELIVERY_P99_TARGET_MS = P99_TARGET_MS;
/** Re-rings far beyond the run: every ring measured is the first ring of a fresh wake. */
const RERINGS = [3_600_000];

type PathKey = 'graphile' | 'probot' | 'mcp' | 'sse' | 'channel';
/** A todo made by a delivery through the intake: GitHub's, and a source's (Gitea). */
type DeliveryKey = 'github' | 'source';

const LABELS: Record<PathKey | DeliveryKey, string> = {
  graphile: 'graphile-worker 0.17: `addJob` → task starts',
  probot: 'bare Probot app: the same GitHub delivery POSTed → answered 200 (committed)',
  mcp: 'switchboard: `createTodo` → MCP `notifications/message`',
  sse: 'switchboard: `createTodo` → SSE `wake` event',
  channel: 'switchboard: `createTodo` → `switchboard channel` → `notifications/claude/channel`',
  github:
    'switchboard: a signed GitHub delivery POSTed → `switchboard channel` → `notifications/claude/channel`',
  source: 'switchboard: a signed Gitea (source) delivery POSTed → SSE `wake` event',
};

const WEBHOOK_SECRET = 'bench-webhook-secret';
const FIXTURES = new URL('../test/fixtures/', import.meta.url);
/** GitHub's default rules put a labelled issue on `issues`; the source's rules, on its queue. */
const GITHUB_QUEUE = 'issues';
const SOURCE_QUEUE = 'wake-source';

/** One event, in ms from just before the write. */
interface Sample {
  /** The wake (or job start) was received. */
  latency: number;
  /** The write's call returned: committed. */
  committed: number;
  /** switchboard: a bare LISTEN in the same process heard the NOTIFY. */
  heard?: number;
  /** switchboard: the todo, and when the dispatcher's takeRing began (database clock, epoch ms). */
  todoId?: number;
  ringStartedAt?: number;
}

export interface WakeLatencyRow {
  key: PathKey | DeliveryKey;
  label: string;
  latency: Distribution;
  committed: Distribution;
  heard?: Distribution;
  /** switchboard, database clock, from the todo's insert: the dispatcher's takeRing began. */
  ringStarted?: Distribution;
  /** …and the push was done (its `rung` record was written). */
  rungRecorded?: Distribution;
  /** p50 ÷ graphile-worker's p50. */
  ratio: number;
}

export interface WakeLatencyResult {
  events: number;
  warmup: number;
  synchronousCommit: string;
  /** The 1-minute load average when the run started and ended. */
  load: [number, number];
  rows: WakeLatencyRow[];
  /** From a delivery's POST: GitHub's and a source's, through the one intake. */
  deliveries: WakeLatencyRow[];
  /** The delivery's reference, p50: the bare Probot app's answer plus graphile-worker's start. */
  deliveryReference: number;
  /** takeRing timed alone, from the benchmark's own pool. */
  takeRing: Distribution;
  /** The same with synchronous_commit off. */
  takeRingLazy: Distribution;
  /** One `select 1` round trip on the same pool. */
  roundTrip: Distribution;
}

/**
 * Starts a server on a schema of its own, attaches one MCP session and one event stream (each
 * as its own agent, on its own queue), installs graphile-worker in another schema, and times
 * `events` wakes through each path, interleaved.
 */
export async function runWakeLatencyBenchmark(
  url: string,
  options: { events?: number } = {},
): Promise<WakeLatencyResult> {
  const events = options.events ?? countFromEnv('BENCH_EVENTS', DEFAULT_EVENTS);
  const loadAtStart = machineLoad();
  const warmup = Math.min(WARMUP_EVENTS, events);
  const runId = randomBytes(3).toString('hex');
  const schema = `bench_wake_${runId}`;
  const graphileSchema = `bench_wake_${runId}_graphile`;
  const probotSchema = `bench_wake_${runId}_probot`;
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-bench-wake-'));
  const secretKey = randomBytes(32);
  const server = await startBenchServer({
    url,
    schema,
    dir,
    handleSignals: true,
    deliveryTiming: { rerings: RERINGS },
    webhookSecret: WEBHOOK_SECRET,
    secretKey: secretKey.toString('base64'),
  });
  const sql = connect(url, { schema, max: 4, log: silentLogger });
  /** Undone in reverse order, whatever happens. */
  const undo: (() => unknown)[] = [];
  try {
    const [{ synchronous_commit: synchronousCommit }] = await sql<
      [{ synchronous_commit: string }]
    >`show synchronous_commit`;

    const human = actorFor(
      await createHuman(sql, systemActor('bench'), { name: 'bench-human' }),
      'cli',
    );
    const agentOn = async (queue: string) => {
      const principal = await createAgent(sql, human, { name: `bench-${queue}`, queues: [queue] });
      return {
        actor: actorFor(principal, 'mcp'),
        queue,
        token: await issueToken(sql, principal.id, 'agent_add'),
      };
    };
    const agents = {
      mcp: await agentOn('wake-mcp'),
      sse: await agentOn('wake-sse'),
      channel: await agentOn('wake-channel'),
      ring: await agentOn('wake-ring'),
      github: await agentOn(GITHUB_QUEUE),
      source: await agentOn(SOURCE_QUEUE),
    };
    // A Gitea source that trusts the fixtures' author, every rule on its own queue.
    const source = await addSource(sql, createSecretBox(secretKey), {
      name: 'bench-gitea',
      kind: 'gitea',
      owner: 'bench-human',
      queues: [SOURCE_QUEUE],
      defaultRules: defaultSourceRules('gitea'),
    });
    const giteaRules = providerFor('gitea').rules;
    await saveSourceRules(
      sql,
      'bench-gitea',
      parseRules(giteaRules, [SOURCE_QUEUE], 'trust:\n  logins: [unknwon]\n'),
    );
    await createBareIntakeTables(sql, probotSchema);
    const probot = await startBareProbotApp(sql, probotSchema, WEBHOOK_SECRET);
    undo.push(() => probot.close());
    const signed = {
      github: await deliveryOf('github', server.url, WEBHOOK_SECRET),
      source: await deliveryOf('source', server.url, source.secret!),
      probot: await deliveryOf('github', probot.url, WEBHOOK_SECRET),
    };

    // The floor for any LISTEN/NOTIFY path: when a plain listener in this process hears the wake.
    const heard = createArrivals();
    const listening = await sql.listen(wakeChannel(schema), (payload) => {
      const at = performance.now();
      const wake = JSON.parse(payload) as Wake;
      if (wake.event === 'claimable') heard.arrived(wake.todo_id, at);
    });
    undo.push(() => listening.unlisten());

    const received = {
      mcp: createArrivals(),
      sse: createArrivals(),
      channel: createArrivals(),
      ring: createArrivals(),
      github: createArrivals(),
      source: createArrivals(),
    };
    const mcp = await connectMcpConsumer(server.url, agents.mcp.token, (data) => {
      const at = performance.now();
      const wake = data as { type?: unknown; todo_id?: unknown };
      if (wake.type === 'wake' && typeof wake.todo_id === 'number')
        received.mcp.arrived(wake.todo_id, at);
    });
    undo.push(() => mcp.close());
    const onSseEvent = (arrivals: Arrivals) => (event: string, data: string) => {
      const at = performance.now();
      if (event !== 'wake') return;
      const wake = JSON.parse(data) as { type: string; todo_id: number };
      if (wake.type === 'wake') arrivals.arrived(wake.todo_id, at);
    };
    const sse = await openSseStream(server.url, agents.sse.token, onSseEvent(received.sse));
    undo.push(() => sse.close());
    // Claude Code's view: the channel process turns the wake into a channel event on its stdout.
    const channel = await connectChannelConsumer(server.url, agents.channel.token, (meta) => {
      const at = performance.now();
      if (meta.event === 'claimable') received.channel.arrived(Number(meta.todo_id), at);
    });
    undo.push(() => channel.close());
    const githubChannel = await connectChannelConsumer(server.url, agents.github.token, (meta) => {
      const at = performance.now();
      if (meta.event === 'claimable') received.github.arrived(Number(meta.todo_id), at);
    });
    undo.push(() => githubChannel.close());
    const sourceStream = await openSseStream(
      server.url,
      agents.source.token,
      onSseEvent(received.source),
    );
    undo.push(() => sourceStream.close());
    await waitForSessions(sql, 5);

    const shared = { connectionString: url, schema: graphileSchema, logger: graphileLogger() };
    await runMigrations(shared);
    const utils = await makeWorkerUtils(shared);
    undo.push(() => utils.release());
    const jobStarted = createArrivals();
    // Its defaults (concurrency 1, LISTEN/NOTIFY with a 2 s poll as fallback): the reference path.
    const runner = await run({
      ...shared,
      noHandleSignals: true,
      taskList: {
        wake: (payload) => {
          jobStarted.arrived((payload as { n: number }).n, performance.now());
        },
      },
    });
    undo.push(() => runner.stop());

    let jobs = 0;
    const measureGraphile = async (): Promise<Sample> => {
      const n = ++jobs;
      const begun = performance.now();
      await utils.addJob('wake', { n });
      const committed = performance.now();
      const started = await jobStarted.wait(n, `graphile-worker job ${n} to start`);
      return { latency: started - begun, committed: committed - begun };
    };
    const measureSwitchboard = (key: 'mcp' | 'sse' | 'channel') => async (): Promise<Sample> => {
      const { actor, queue } = agents[key];
      const begun = performance.now();
      const { todo } = await createTodo(sql, human, { queue, title: 'wake me', source: 'api' });
      const committed = performance.now();
      const at = await received[key].wait(todo.id, `the ${key} wake of todo ${todo.id}`);
      const heardAt = await heard.wait(todo.id, `the NOTIFY of todo ${todo.id}`);
      // takeRing began at now() = next_ring_at − the first re-ring delay; read
      // before the todo is finished, after which the ring row is deleted.
      const [ring] = await sql<{ started_at: number }[]>`
          select extract(epoch from next_ring_at) * 1000 - ${RERINGS[0]!} as started_at
          from todo_rings where todo_id = ${todo.id}`;
      // Untimed: the todo is taken off the board, so that no later ring of it can land in
      // another measurement.
      await finish(sql, actor, todo.id);
      return {
        latency: at - begun,
        committed: committed - begun,
        heard: heardAt - begun,
        todoId: todo.id,
        ...(ring ? { ringStartedAt: Number(ring.started_at) } : {}),
      };
    };
    const measureDelivery = (key: DeliveryKey) => async (): Promise<Sample> => {
      const { actor } = agents[key];
      const { url: to, headers, body } = signed[key]();
      const begun = performance.now();
      const response = await fetch(to, { method: 'POST', headers, body });
      const answer = (await response.json()) as {
        delivery?: { disposition: string; todo_id: number | null };
      };
      const committed = performance.now();
      const todoId = answer.delivery?.todo_id;
      if (response.status !== 200 || answer.delivery?.disposition !== 'created' || !todoId) {
        throw new Error(`the ${key} delivery made no todo: ${JSON.stringify(answer)}`);
      }
      const at = await received[key].wait(todoId, `the ${key} wake of todo ${todoId}`);
      const heardAt = await heard.wait(todoId, `the NOTIFY of todo ${todoId}`);
      await finish(sql, actor, todoId);
      return { latency: at - begun, committed: committed - begun, heard: heardAt - begun, todoId };
    };
    const measureProbot = async (): Promise<Sample> => {
      const { url: to, headers, body } = signed.probot();
      const begun = performance.now();
      const response = await fetch(to, { method: 'POST', headers, body });
      await response.arrayBuffer();
      const answered = performance.now() - begun;
      if (response.status !== 200)
        throw new Error(`the bare Probot app answered ${response.status}`);
      return { latency: answered, committed: answered };
    };
    const paths: [PathKey | DeliveryKey, () => Promise<Sample>][] = [
      ['graphile', measureGraphile],
      ['probot', measureProbot],
      ['mcp', measureSwitchboard('mcp')],
      ['sse', measureSwitchboard('sse')],
      ['channel', measureSwitchboard('channel')],
      ['github', measureDelivery('github')],
      ['source', measureDelivery('source')],
    ];

    const samples: Record<PathKey | DeliveryKey, Sample[]> = {
      graphile: [],
      probot: [],
      mcp: [],
      sse: [],
      channel: [],
      github: [],
      source: [],
    };
    for (let round = 0; round < warmup + events; round++) {
      // Rotated, so that no path always follows the same other one.
      for (let i = 0; i < paths.length; i++) {
        const [key, measure] = paths[(round + i) % paths.length]!;
        const sample = await measure();
        if (round >= warmup) samples[key].push(sample);
        await sleep(GAP_MS);
      }
      const done = round + 1 - warmup;
      if (done > 0 && (done % 100 === 0 || done === events)) progress(`${done}/${events} events`);
    }

    // Where the time goes: the ring's statement timed alone. A consumer on its own queue is
    // rung by the server first (so the todo has its ring row, as a live one would); then the
    // same takeRing the dispatcher runs is timed for a new wake of that todo, on a connection
    // as the server's (commit waits for the WAL flush) and on one with synchronous_commit off
    // (the commit is visible, and its locks released, at once; only its durability lags).
    const ring = await openSseStream(server.url, agents.ring.token, onSseEvent(received.ring));
    undo.push(() => ring.close());
    await waitForSessions(sql, 6);
    const durable = connect(url, { schema, max: 1, log: silentLogger });
    undo.push(() => durable.end({ timeout: 5 }));
    const lazy = connect(url, { schema, max: 1, log: silentLogger });
    undo.push(() => lazy.end({ timeout: 5 }));
    await lazy`set synchronous_commit = off`; // one connection: the setting stays with the pool
    const takeRingMs: Record<'durable' | 'lazy', number[]> = { durable: [], lazy: [] };
    const roundTripMs: number[] = [];
    for (let i = 0; i < Math.min(TAKE_RING_SAMPLES, events); i++) {
      const { actor, queue } = agents.ring;
      const { todo } = await createTodo(sql, human, { queue, title: 'ring me', source: 'api' });
      await received.ring.wait(todo.id, `the ring of todo ${todo.id}`);
      for (const [commit, pool] of [
        ['durable', durable],
        ['lazy', lazy],
      ] as const) {
        await sleep(GAP_MS);
        const begun = performance.now();
        const taken = await takeRing(pool, {
          todoId: todo.id,
          reason: { wake: `bench-${commit}-${i}` },
          schedule: RERINGS,
          sessionTtlMs: DEFAULT_TIMING.sessionTtlMs,
        });
        takeRingMs[commit].push(performance.now() - begun);
        if (taken?.target?.kind !== 'session') throw new Error('takeRing found no session');
      }
      const begun = performance.now();
      await durable`select 1`;
      roundTripMs.push(performance.now() - begun);
      await finish(sql, actor, todo.id);
    }

    // The server's side of each measured wake, on the database clock: from the todo's insert
    // (its `created` event) to takeRing's start and to the `rung` record written after the push.
    const measuredIds = [
      ...samples.mcp,
      ...samples.sse,
      ...samples.channel,
      ...samples.github,
      ...samples.source,
    ].map((s) => s.todoId!);
    const trail = new Map<number, { created?: number; rung?: number }>();
    for (const event of await sql<{ todo_id: number; action: string; at: number }[]>`
      select todo_id, action, extract(epoch from at) * 1000 as at from todo_events
      where todo_id = any(${measuredIds}::bigint[]) and action in ('created', 'rung')`) {
      const entry = trail.get(event.todo_id) ?? {};
      entry[event.action as 'created' | 'rung'] = Number(event.at);
      trail.set(event.todo_id, entry);
    }
    const serverSide = (
      list: Sample[],
      pick: (s: Sample, t: { created: number; rung: number }) => number | undefined,
    ) => {
      const values = list.flatMap((s) => {
        const t = trail.get(s.todoId!);
        const value =
          t?.created !== undefined && t.rung !== undefined
            ? pick(s, { created: t.created, rung: t.rung })
            : undefined;
        return value === undefined ? [] : [value];
      });
      return values.length ? distribution(values) : undefined;
    };

    const graphileP50 = distribution(samples.graphile.map((s) => s.latency)).p50;
    const rowOf = (key: PathKey | DeliveryKey): WakeLatencyRow => {
      const latency = distribution(samples[key].map((s) => s.latency));
      const heardMs = samples[key].flatMap((s) => (s.heard === undefined ? [] : [s.heard]));
      const ringStarted = serverSide(samples[key], (s, t) =>
        s.ringStartedAt === undefined ? undefined : s.ringStartedAt - t.created,
      );
      const rungRecorded = serverSide(samples[key], (_, t) => t.rung - t.created);
      return {
        key,
        label: LABELS[key],
        latency,
        committed: distribution(samples[key].map((s) => s.committed)),
        ...(heardMs.length ? { heard: distribution(heardMs) } : {}),
        ...(ringStarted ? { ringStarted } : {}),
        ...(rungRecorded ? { rungRecorded } : {}),
        ratio: latency.p50 / graphileP50,
      };
    };
    const rows = (['graphile', 'mcp', 'sse', 'channel'] as const).map(rowOf);
    const deliveryReference = distribution(samples.probot.map((s) => s.latency)).p50 + graphileP50;
    const probotRow = rowOf('probot');
    return {
      events,
      warmup,
      synchronousCommit,
      load: [loadAtStart, machineLoad()],
      rows,
      deliveries: [
        { ...rowOf('github'), ratio: rowOf('github').latency.p50 / deliveryReference },
        rowOf('source'),
        probotRow,
      ],
      deliveryReference,
      takeRing: distribution(takeRingMs.durable),
      takeRingLazy: distribution(takeRingMs.lazy),
      roundTrip: distribution(roundTripMs),
    };
  } finally {
    for (const step of undo.reverse()) {
      try {
        await step();
      } catch {
        // tearing down: the next step still runs
      }
    }
    await server.close();
    for (const name of [schema, graphileSchema, probotSchema]) {
      await sql`drop schema if exists ${sql(name)} cascade`.catch(() => {});
    }
    await sql.end({ timeout: 5 });
    await rm(dir, { recursive: true, force: true });
  }
}

/** The printed result: markdown table lines, ready to paste into the README. */
export function formatWakeLatencyTable(result: WakeLatencyResult): string {
  const ms = (value: number) => value.toFixed(1);
  const row = (key: PathKey) => result.rows.find((r) => r.key === key)!;
  const mcp = row('mcp');
  const ratio = (r: WakeLatencyRow) =>
    r.key === 'graphile'
      ? '1.00'
      : `${r.ratio.toFixed(2)}` +
        (r.key === 'mcp'
          ? ` (target ≤ ${P50_TARGET_RATIO.toFixed(2)}${r.ratio <= P50_TARGET_RATIO ? '' : ', missed'})`
          : '');
  const step = (what: string, pick: (r: WakeLatencyRow) => Distribution | undefined) =>
    `| ${what} | ${(['graphile', 'mcp', 'sse', 'channel'] as const)
      .map((key) => {
        const d = pick(row(key));
        return d ? `${ms(d.p50)} / ${ms(d.p99)}` : '—';
      })
      .join(' | ')} |`;
  return [
    `synchronous_commit: ${result.synchronousCommit}` +
      (result.synchronousCommit === 'on' ? '' : ' — WARNING: not on, numbers are not comparable'),
    describeLoad(...result.load),
    '',
    `${result.events} sequential events per path (after ${result.warmup} warm-up), paths interleaved; ms from just before the write`,
    '',
    '| path | p50 ms | p90 ms | p99 ms | max ms | p50 ÷ graphile-worker |',
    '| --- | ---: | ---: | ---: | ---: | --- |',
    ...(['graphile', 'mcp', 'sse', 'channel'] as const).map((key) => {
      const r = row(key);
      return `| ${r.label} | ${ms(r.latency.p50)} | ${ms(r.latency.p90)} | ${ms(r.latency.p99)} | ${ms(r.latency.max)} | ${ratio(r)} |`;
    }),
    '',
    `MCP p99: ${ms(mcp.latency.p99)} ms (target ≤ ${P99_TARGET_MS} ms${mcp.latency.p99 <= P99_TARGET_MS ? '' : ', missed'})`,
    '',
    'where the time goes (p50 / p99 ms from just before the write):',
    '',
    '| step | graphile-worker | switchboard MCP | switchboard SSE | switchboard channel |',
    '| --- | ---: | ---: | ---: | ---: |',
    step('write committed (the call returned)', (r) => r.committed),
    step('NOTIFY heard by a bare LISTEN in the same process', (r) => r.heard),
    step("server: the dispatcher's takeRing began (database clock)", (r) => r.ringStarted),
    step('server: pushed, `rung` being recorded (database clock)', (r) => r.rungRecorded),
    step('received by the consumer', (r) => r.latency),
    '',
    'a todo made by a delivery, through the one intake (ms from just before the POST):',
    '',
    '| path | answered 200 (committed) p50 / p99 | NOTIFY heard p50 / p99 | wake p50 | p90 | p99 | max | p50 ratio |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...result.deliveries.map(
      (r) =>
        `| ${r.label} | ${ms(r.committed.p50)} / ${ms(r.committed.p99)} | ${r.heard ? `${ms(r.heard.p50)} / ${ms(r.heard.p99)}` : '—'} | ${r.key === 'probot' ? '—' : ms(r.latency.p50)} | ${ms(r.latency.p90)} | ${ms(r.latency.p99)} | ${ms(r.latency.max)} | ${r.key === 'probot' ? '—' : r.ratio.toFixed(2)} |`,
    ),
    '',
    `the GitHub delivery's ratio is to its reference, the bare Probot app's answer p50 plus ` +
      `graphile-worker's \`addJob\` → start p50: ${ms(result.deliveryReference)} ms ` +
      `(target ≤ ${DELIVERY_P50_TARGET_RATIO}×, p99 ≤ ${DELIVERY_P99_TARGET_MS} ms); the source's, to graphile-worker's`,
    '',
    `takeRing alone (one statement, as the dispatcher runs it), p50 / p99: ` +
      `${ms(result.takeRing.p50)} / ${ms(result.takeRing.p99)} ms as the server runs it, ` +
      `${ms(result.takeRingLazy.p50)} / ${ms(result.takeRingLazy.p99)} ms with synchronous_commit off; ` +
      `one \`select 1\` round trip: ${ms(result.roundTrip.p50)} / ${ms(result.roundTrip.p99)} ms`,
  ].join('\n');
}

const SUMMARY_LABELS: Record<Exclude<PathKey, 'graphile'> | DeliveryKey, string> = {
  mcp: 'wake latency, create → MCP `notifications/message`',
  sse: 'wake latency, create → event-stream `wake`',
  channel: 'wake latency, create → `switchboard channel` → `notifications/claude/channel`',
  github:
    'wake latency, a GitHub delivery POSTed → `switchboard channel` → `notifications/claude/channel`',
  probot: 'a bare Probot app answering the same delivery',
  source: 'wake latency, a source’s (Gitea) delivery POSTed → event-stream `wake`',
};

/** The summary table's rows: each switchboard path against graphile-worker's, p50 ÷ p50. */
export function wakeLatencySummaryRows(result: WakeLatencyResult): SummaryRow[] {
  const ms = (value: number) => value.toFixed(1);
  const graphile = result.rows.find((row) => row.key === 'graphile')!;
  return (['mcp', 'sse', 'channel'] as const).map((key, index) => {
    const row = result.rows.find((r) => r.key === key)!;
    const met = row.ratio <= P50_TARGET_RATIO && row.latency.p99 <= P99_TARGET_MS;
    return {
      benchmark: SUMMARY_LABELS[key],
      figure:
        `p50 ${ms(row.latency.p50)} ms, p99 ${ms(row.latency.p99)} ms` +
        (key === 'mcp' ? ` (${loadNote(...result.load)})` : ''),
      baseline:
        index === 0
          ? `graphile-worker \`addJob\` → task start p50 ${ms(graphile.latency.p50)} ms, p99 ${ms(graphile.latency.p99)} ms`
          : '(same)',
      ratio: row.ratio.toFixed(2),
      target:
        key === 'mcp'
          ? targetCell(`p50 ≤ ${P50_TARGET_RATIO}×, p99 ≤ ${P99_TARGET_MS} ms`, met)
          : '—',
    };
  });
}

/** The summary table's rows for todos made by deliveries: GitHub's beside a source's. */
export function deliveryWakeSummaryRows(result: WakeLatencyResult): SummaryRow[] {
  const ms = (value: number) => value.toFixed(1);
  const github = result.deliveries.find((row) => row.key === 'github')!;
  const probot = result.deliveries.find((row) => row.key === 'probot')!;
  const graphile = result.rows.find((row) => row.key === 'graphile')!;
  const met =
    github.ratio <= DELIVERY_P50_TARGET_RATIO && github.latency.p99 <= DELIVERY_P99_TARGET_MS;
  return [
    {
      benchmark: SUMMARY_LABELS.github,
      figure: `p50 ${ms(github.latency.p50)} ms, p99 ${ms(github.latency.p99)} ms (${loadNote(...result.load)})`,
      baseline:
        `bare Probot app answers the same delivery p50 ${ms(probot.latency.p50)} ms + ` +
        `graphile-worker \`addJob\` → start p50 ${ms(graphile.latency.p50)} ms = ${ms(result.deliveryReference)} ms`,
      ratio: github.ratio.toFixed(2),
      target: targetCell(
        `p50 ≤ ${DELIVERY_P50_TARGET_RATIO}×, p99 ≤ ${DELIVERY_P99_TARGET_MS} ms`,
        met,
      ),
    },
    ...result.deliveries
      .filter((row) => row.key === 'source')
      .map((row) => ({
        benchmark: SUMMARY_LABELS.source,
        figure: `p50 ${ms(row.latency.p50)} ms, p99 ${ms(row.latency.p99)} ms`,
        baseline: `graphile-worker \`addJob\` → start p50 ${ms(graphile.latency.p50)} ms`,
        ratio: row.ratio.toFixed(2),
        target: '—',
      })),
  ];
}

export const wakeLatencyBenchmark: Benchmark = {
  name: 'wake latency',
  run: async (url) => {
    const result = await runWakeLatencyBenchmark(url);
    return {
      summary: [...wakeLatencySummaryRows(result), ...deliveryWakeSummaryRows(result)],
      details: formatWakeLatencyTable(result),
    };
  },
};

interface Arrivals {
  arrived(id: number, at: number): void;
  /** When `id` arrived, waiting for it if need be. */
  wait(id: number, what: string): Promise<number>;
}

/** Arrival times by id; an arrival may come before anyone waits for it. */
function createArrivals(): Arrivals {
  const early = new Map<number, number>();
  const waiters = new Map<number, (at: number) => void>();
  return {
    arrived(id, at) {
      const waiter = waiters.get(id);
      if (waiter) {
        waiters.delete(id);
        waiter(at);
      } else if (!early.has(id)) early.set(id, at);
    },
    async wait(id, what) {
      const at = early.get(id);
      if (at !== undefined) {
        early.delete(id);
        return at;
      }
      const controller = new AbortController();
      try {
        return await Promise.race([
          new Promise<number>((resolve) => waiters.set(id, resolve)),
          sleep(WAIT_MS, undefined, { signal: controller.signal }).then(() => {
            throw new Error(`timed out after ${WAIT_MS} ms waiting for ${what}`);
          }),
        ]);
      } finally {
        waiters.delete(id);
        controller.abort();
      }
    },
  };
}

/**
 * Signed deliveries as the provider sends them (GitHub: a labelled issue; Gitea: an opened pull
 * request), each a body of its own, so that none is a replay of another.
 */
async function deliveryOf(
  key: DeliveryKey,
  server: string,
  secret: string,
): Promise<() => { url: string; headers: Record<string, string>; body: string }> {
  const fixture =
    key === 'github' ? 'github/issues.labeled.switchboard.json' : 'gitea/pull_request.opened.json';
  const template = JSON.parse(await readFile(new URL(fixture, FIXTURES), 'utf8')) as {
    issue?: { number: number };
    pull_request?: { number: number };
  };
  let n = 0;
  return (): { url: string; headers: Record<string, string>; body: string } => {
    (template.issue ?? template.pull_request)!.number = 100_000 + ++n;
    const body = JSON.stringify(template);
    const hex = createHmac('sha256', secret).update(body).digest('hex');
    const id = randomUUID();
    return key === 'github'
      ? {
          url: `${server}/api/github/webhooks`,
          headers: {
            'content-type': 'application/json',
            'x-github-event': 'issues',
            'x-github-delivery': id,
            'x-hub-signature-256': `sha256=${hex}`,
          },
          body,
        }
      : {
          url: `${server}/api/sources/bench-gitea/webhooks`,
          headers: {
            'content-type': 'application/json',
            'x-gitea-event': 'pull_request',
            'x-gitea-delivery': id,
            'x-gitea-signature': hex,
          },
          body,
        };
  };
}

async function finish(sql: postgres.Sql, agent: Actor, id: number): Promise<void> {
  const claimed = await claimTodo(sql, agent, id);
  await completeTodo(sql, agent, id, claimed.lease_token);
}

/** Waits until `count` consumers are attached (each stream attaches as it opens). */
async function waitForSessions(sql: postgres.Sql, count: number): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const [{ n }] = await sql<[{ n: number }]>`select count(*)::int as n from consumer_sessions`;
    if (n === count) return;
    if (Date.now() > deadline) throw new Error(`${n} consumer sessions attached, not ${count}`);
    await sleep(10);
  }
}

function graphileLogger(): Logger {
  return new Logger(() => (level, message) => {
    if (String(level) === 'error') process.stderr.write(`graphile-worker: ${message}\n`);
  });
}

function progress(message: string): void {
  process.stderr.write(`wake: ${message}\n`);
}

runIfMain(import.meta.url, wakeLatencyBenchmark);

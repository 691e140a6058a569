// The paths agents really use, end to end through a real server in a process of its own:
// claim + complete by 8 MCP clients over Streamable HTTP and by 8 clients of the JSON API, set
// against a bare MCP server writing the same rows with the same guarantees (the same SDK on both
// sides, a token checked per request, a leased claim and a fenced completion with their history,
// one statement per call, in a process of its own: bench/support/bare-mcp-server-same-rows.ts),
// a bare MCP server doing only the protocol's work (one statement per tool on a four-column
// table: bench/support/bare-mcp-server.ts) and graphile-worker (concurrency 8) in the same run;
// and single requests, one at a time, against a bare node:http server answering the same way.
//
//   npm run bench:agents           (BENCH_TODOS=3000, BENCH_REQUESTS=1000, BENCH_DATABASE_URL=…)
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type postgres from 'postgres';
import { connect } from '../src/platform/db/open-database.js';
import { silentLogger } from '../src/platform/logger.js';
import { graphileSystem } from './claim.js';
import { createBareJobs, seedBareJobs } from './support/bare-mcp-server.js';
import {
  createSameRowsAgent,
  createSameRowsLedger,
  seedSameRowsTodos,
} from './support/bare-mcp-server-same-rows.js';
import type { Benchmark, SummaryRow } from './support/benchmark.js';
import { countFromEnv } from './support/count-from-env.js';
import { cpuCells, cpuPerUnit, startCpuSplit, type CpuSplit } from './support/cpu-split.js';
import { formatCount, targetCell } from './support/format-summary-table.js';
import { describeLoad, loadNote, machineLoad } from './support/machine-load.js';
import { distribution, median, type Distribution } from './support/percentile.js';
import { runIfMain } from './support/run-if-main.js';
import { spawnBareProcess } from './support/spawn-bare-process.js';
import { spawnServerProcess, type ServerProcess } from './support/spawn-server-process.js';

const WORKERS = 8;
const ROUNDS = 3;
const DEFAULT_TODOS = 3000;
const WARMUP_TODOS = 200;
const DEFAULT_REQUESTS = 1000;
const MCP_TARGET = 0.5;
/** The MCP path against the bare MCP server writing the same rows with the same guarantees. */
const MCP_VS_SAME_ROWS_TARGET = 0.85;
const API_TARGET = 0.6;
const TOOL_CALL_TARGET = 3;

type PathKey = 'mcp' | 'api' | 'same_rows_mcp' | 'bare_mcp' | 'graphile';
const THROUGHPUT_KEYS = ['mcp', 'api', 'same_rows_mcp', 'bare_mcp', 'graphile'] as const;

export interface ThroughputRow {
  key: PathKey;
  label: string;
  /** Todos per second of each round, in the order they ran. */
  rounds: number[];
  median: number;
  /** CPU time per todo, median of the rounds (null off Linux). */
  cpu: CpuSplit | null;
}

export interface LatencyRow {
  key: 'bare' | 'whoami' | 'create' | 'tool' | 'mcp_create';
  label: string;
  /** Milliseconds, one request at a time on a kept-alive connection. */
  ms: Distribution;
}

export interface AgentPathsResult {
  todos: number;
  requests: number;
  load: [number, number];
  throughput: ThroughputRow[];
  latency: LatencyRow[];
}

export async function runAgentPathsBenchmark(
  url: string,
  options: { todos?: number; requests?: number } = {},
): Promise<AgentPathsResult> {
  const todos = options.todos ?? countFromEnv('BENCH_TODOS', DEFAULT_TODOS);
  const requests = options.requests ?? countFromEnv('BENCH_REQUESTS', DEFAULT_REQUESTS);
  const runId = randomBytes(3).toString('hex');
  const schema = `bench_agents_${runId}`;
  const loadAtStart = machineLoad();
  const bareSchema = `${schema}_bare`;
  const sameSchema = `${schema}_same`;
  const server = await spawnServerProcess(url, schema);
  const sql = connect(url, { schema, max: 2, log: silentLogger });
  await createBareJobs(sql, bareSchema);
  await createSameRowsLedger(sql, sameSchema);
  const sameAgent = await createSameRowsAgent(sql, sameSchema, 'bench-agent', sameRowsQueues());
  const bareServer = await spawnBareProcess('mcp', url, bareSchema);
  const sameServer = await spawnBareProcess('mcp-same-rows', url, sameSchema);
  // Every code path runs before anything is timed; a small run (the test's) warms up with less.
  const warmup = Math.min(WARMUP_TODOS, todos);
  try {
    const agent = await createAgent(server, 'bench-agent');
    const mcp = await mcpPath(server.url, agent.token);
    const bareMcp = await mcpPath(bareServer.url);
    const sameMcp = await mcpPath(sameServer.url, sameAgent.token);
    const paths: Record<'mcp' | 'api', Path> = {
      mcp,
      api: apiPath(server.url, agent),
    };
    try {
      // Warm-up: every code path runs (and the server's pool grows) before anything is timed.
      for (const [key, path] of Object.entries(paths)) {
        await seed(sql, `warm-${key}`, warmup, agent);
        await path.drain(`warm-${key}`);
      }
      await seedBareJobs(sql, bareSchema, 'warm', warmup);
      await bareMcp.drain('warm');
      await seedSameRowsTodos(sql, sameSchema, 'warm', warmup, sameAgent);
      await sameMcp.drain('warm');
      await graphileSystem.measure(url, `${schema}_graphile_warmup`, warmup);

      const rates = new Map<PathKey, number[]>(THROUGHPUT_KEYS.map((key) => [key, []]));
      const cpu = new Map<PathKey, CpuSplit[]>(THROUGHPUT_KEYS.map((key) => [key, []]));
      const serverPid: Record<PathKey, number | null> = {
        mcp: server.pid,
        api: server.pid,
        same_rows_mcp: sameServer.pid,
        bare_mcp: bareServer.pid,
        // The workers run in this process: their CPU is the clients'.
        graphile: null,
      };
      for (let round = 1; round <= ROUNDS; round++) {
        for (const key of THROUGHPUT_KEYS) {
          let ms: number;
          const cpuSince = startCpuSplit(serverPid[key]);
          if (key === 'graphile') {
            ms = (await graphileSystem.measure(url, `${schema}_graphile_${round}`, todos)).ms;
          } else if (key === 'bare_mcp') {
            const queue = `bare-${round}`;
            await seedBareJobs(sql, bareSchema, queue, todos);
            const started = performance.now();
            await bareMcp.drain(queue);
            ms = performance.now() - started;
            await checkBareDone(sql, bareSchema, queue, todos);
          } else if (key === 'same_rows_mcp') {
            const queue = `same-${round}`;
            await seedSameRowsTodos(sql, sameSchema, queue, todos, sameAgent);
            const started = performance.now();
            await sameMcp.drain(queue);
            ms = performance.now() - started;
            await checkDone(sql, queue, todos, sameSchema);
          } else {
            const queue = `${key}-${round}`;
            await seed(sql, queue, todos, agent);
            const started = performance.now();
            await paths[key].drain(queue);
            ms = performance.now() - started;
            await checkDone(sql, queue, todos);
          }
          const rate = todos / (ms / 1000);
          if (cpuSince) cpu.get(key)!.push(cpuSince());
          rates.get(key)!.push(rate);
          progress(`round ${round}/${ROUNDS} ${key}: ${Math.round(rate)} todos/s`);
        }
      }
      const latency = await measureLatency(server.url, agent, mcp.client, requests);
      return {
        todos,
        requests,
        load: [loadAtStart, machineLoad()],
        throughput: THROUGHPUT_KEYS.map((key) => ({
          key,
          label: THROUGHPUT_LABELS[key],
          rounds: rates.get(key)!,
          median: median(rates.get(key)!),
          cpu: cpuPerUnit(cpu.get(key)!, todos),
        })),
        latency,
      };
    } finally {
      await mcp.close();
      await bareMcp.close();
      await sameMcp.close();
    }
  } finally {
    await bareServer.close().catch(() => {});
    await sameServer.close().catch(() => {});
    await server.stop().catch(() => {});
    await sql`drop schema if exists ${sql(bareSchema)} cascade`.catch(() => {});
    await sql`drop schema if exists ${sql(sameSchema)} cascade`.catch(() => {});
    await sql`drop schema if exists ${sql(schema)} cascade`.catch(() => {});
    await sql.end({ timeout: 5 });
  }
}

const THROUGHPUT_LABELS: Record<PathKey, string> = {
  mcp: `${WORKERS} MCP clients over Streamable HTTP (claim_next → complete_todo)`,
  api: `${WORKERS} JSON API clients (POST …/claim → POST …/complete)`,
  same_rows_mcp: `bare MCP server writing the same rows (same SDK, a token checked per request, leased claim and fenced completion with their history, one statement per call), ${WORKERS} MCP clients`,
  bare_mcp: `bare MCP server (same SDK, one statement per tool), ${WORKERS} MCP clients`,
  graphile: `graphile-worker 0.17, concurrency ${WORKERS}`,
};

interface Agent {
  name: string;
  token: string;
  owner: string;
}

interface Path {
  /** Claims and completes everything on `queue` with WORKERS concurrent workers. */
  drain(queue: string): Promise<void>;
}

/**
 * WORKERS MCP sessions of the agent whose `token` they send (of nobody, on the bare server), each
 * claiming and completing until its queue is empty.
 */
async function mcpPath(
  baseUrl: string,
  token?: string,
): Promise<Path & { client: Client; close(): Promise<void> }> {
  const sessions = await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      const transport = new StreamableHTTPClientTransport(new URL('/mcp', baseUrl), {
        requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : {},
      });
      const client = new Client({ name: 'switchboard-bench', version: '1.0.0' });
      await client.connect(transport);
      return { client, transport };
    }),
  );
  const call = async (client: Client, name: string, args: Record<string, unknown>) => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
    return result.structuredContent as { todo: { id: number } | null };
  };
  return {
    client: sessions[0]!.client,
    async drain(queue) {
      await Promise.all(
        sessions.map(async ({ client }) => {
          for (;;) {
            const { todo } = await call(client, 'claim_next', { queue });
            if (!todo) return;
            await call(client, 'complete_todo', { todo_id: todo.id, summary: 'ok' });
          }
        }),
      );
    },
    async close() {
      for (const { client, transport } of sessions) {
        await transport.terminateSession().catch(() => {});
        await client.close();
      }
    },
  };
}

/** WORKERS JSON API clients of one agent (fetch keeps its connections alive). */
function apiPath(baseUrl: string, agent: Agent): Path {
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${baseUrl}/api/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await response.json()) as { todo: { id: number; lease_token: string } | null };
    if (!response.ok) throw new Error(`POST ${path} answered ${response.status}`);
    return json;
  };
  return {
    async drain(queue) {
      await Promise.all(
        Array.from({ length: WORKERS }, async () => {
          for (;;) {
            const { todo } = await post(`/queues/${queue}/claim`, {});
            if (!todo) return;
            await post(`/todos/${todo.id}/complete`, {
              lease_token: todo.lease_token,
              summary: 'ok',
            });
          }
        }),
      );
    },
  };
}

/**
 * One request at a time, timed from send to the whole answer read: a bare node:http server in
 * this process answering a small JSON body is the floor for any HTTP request on this machine.
 * The MCP tool call is a raw JSON-RPC POST on an initialized session (not through the SDK
 * client), so that it is the server's cost, not the client library's.
 */
async function measureLatency(
  baseUrl: string,
  agent: Agent,
  mcp: Client,
  requests: number,
): Promise<LatencyRow[]> {
  const bare = await startBareServer();
  try {
    const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/`;
    const auth = { authorization: `Bearer ${agent.token}` };
    const json = { ...auth, 'content-type': 'application/json' };
    const sessionId = (mcp as unknown as { _transport: StreamableHTTPClientTransport })._transport
      .sessionId!;
    const { todo } = (await (
      await fetch(`${baseUrl}/api/v1/todos`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ queue: 'latency', title: 'read me' }),
      })
    ).json()) as { todo: { id: number } };
    const mcpHeaders = {
      ...json,
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId,
      'mcp-protocol-version': '2025-11-25',
    };
    let rpcId = 0;
    const toolCall = (name: string, args: Record<string, unknown>) => () =>
      fetch(`${baseUrl}/mcp`, {
        method: 'POST',
        headers: mcpHeaders,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: ++rpcId,
          method: 'tools/call',
          params: { name, arguments: args },
        }),
      });
    let created = 0;
    const cases: [LatencyRow['key'], string, () => Promise<Response>][] = [
      ['bare', 'bare `node:http` server, same client', () => fetch(bareUrl)],
      [
        'whoami',
        '`GET /api/v1/whoami`',
        () => fetch(`${baseUrl}/api/v1/whoami`, { headers: auth }),
      ],
      [
        'create',
        '`POST /api/v1/todos`',
        () =>
          fetch(`${baseUrl}/api/v1/todos`, {
            method: 'POST',
            headers: json,
            body: JSON.stringify({ queue: 'latency', title: `todo ${++created}` }),
          }),
      ],
      ['tool', 'MCP `tools/call` `get_todo`', toolCall('get_todo', { todo_id: todo.id })],
      [
        'mcp_create',
        'MCP `tools/call` `create_todo`',
        toolCall('create_todo', { queue: 'latency', title: 'over MCP' }),
      ],
    ];
    const rows: LatencyRow[] = [];
    for (const [key, label, send] of cases) {
      // Warm-up, then timed: the whole answer read each time, as a client would.
      for (let i = 0; i < Math.min(100, requests); i++) await (await send()).arrayBuffer();
      const times: number[] = [];
      for (let i = 0; i < requests; i++) {
        const started = performance.now();
        const response = await send();
        await response.arrayBuffer();
        times.push(performance.now() - started);
        if (!response.ok) throw new Error(`${label} answered ${response.status}`);
      }
      rows.push({ key, label, ms: distribution(times) });
    }
    return rows;
  } finally {
    await new Promise((resolve) => bare.close(resolve));
  }
}

function startBareServer(): Promise<Server> {
  const body = JSON.stringify({ principal: { name: 'bench-agent', kind: 'agent' } });
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/**
 * `count` pending todos on `queue`, written as createTodo would (todo and history row), in one
 * statement, before anything is timed — as graphile-worker's jobs are added before its run. The
 * wake triggers are off for it (a replica session runs no ordinary trigger), and each todo gets
 * its ring row, so the server spends the timed part claiming and completing, not ringing 3,000
 * todos nobody waits for.
 */
async function seed(sql: postgres.Sql, queue: string, count: number, agent: Agent): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`set local session_replication_role = replica`;
    await tx`
      with t as (
        insert into todos (queue, kind, title, state, source, attributed_to, available_at)
        select ${queue}, 'manual', 'bench todo ' || g, 'pending', 'api', ${agent.owner}, now()
        from generate_series(1, ${count}::int) g
        returning id
      ), r as (
        insert into todo_rings (todo_id, rings, next_ring_at) select id, 1, now() + interval '1 day' from t
      )
      insert into todo_events (todo_id, actor_kind, actor, via, action)
      select t.id, 'agent', ${agent.name}, 'api', 'created' from t`;
  });
  await sql`vacuum analyze todos, todo_events`;
}

/** Every job of the bare server's round done. */
async function checkBareDone(
  sql: postgres.Sql,
  schema: string,
  queue: string,
  count: number,
): Promise<void> {
  const [{ done }] = await sql<[{ done: number }]>`
    select count(*)::int as done from ${sql(schema)}.jobs where queue = ${queue} and state = 'done'`;
  if (done !== count) throw new Error(`bare ${queue}: expected done = ${count}, got ${done}`);
}

/**
 * Every todo of the round done once: one claim and one completion each — switchboard's, or the
 * same-rows server's in `schema`.
 */
async function checkDone(
  sql: postgres.Sql,
  queue: string,
  count: number,
  schema?: string,
): Promise<void> {
  const todos = schema ? sql`${sql(schema)}.todos` : sql`todos`;
  const events = schema ? sql`${sql(schema)}.todo_events` : sql`todo_events`;
  const [check] = await sql<[{ done: number; claimed: number; completed: number }]>`
    select count(*) filter (where t.state = 'done')::int as done,
           (select count(*)::int from ${events} e join ${todos} d on d.id = e.todo_id
            where d.queue = ${queue} and e.action = 'claimed') as claimed,
           (select count(*)::int from ${events} e join ${todos} d on d.id = e.todo_id
            where d.queue = ${queue} and e.action = 'completed') as completed
    from ${todos} t where t.queue = ${queue}`;
  for (const [name, value] of Object.entries(check)) {
    if (value !== count) throw new Error(`${queue}: expected ${name} = ${count}, got ${value}`);
  }
}

async function createAgent(server: ServerProcess, name: string): Promise<Agent> {
  const response = await fetch(`${server.url}/api/v1/agents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, queues: ['latency', ...queuesOf()] }),
  });
  const body = (await response.json()) as { token?: string; agent?: { owner: string } };
  if (response.status !== 201 || !body.token || !body.agent)
    throw new Error(`creating agent ${name} answered ${response.status}`);
  return { name, token: body.token, owner: body.agent.owner };
}

/** The queues the same-rows server's agent works: its warm-up's, and one per round. */
function sameRowsQueues(): string[] {
  return ['warm', ...Array.from({ length: ROUNDS }, (_, i) => `same-${i + 1}`)];
}

/** Every queue a round works: one per path and round, and the warm-ups. */
function queuesOf(): string[] {
  const queues = ['warm-mcp', 'warm-api'];
  for (let round = 1; round <= ROUNDS; round++) queues.push(`mcp-${round}`, `api-${round}`);
  return queues;
}

export function formatAgentPathsTable(result: AgentPathsResult): string {
  const graphile = result.throughput.find((row) => row.key === 'graphile')!.median;
  const bareMcp = result.throughput.find((row) => row.key === 'bare_mcp')!.median;
  const sameRows = result.throughput.find((row) => row.key === 'same_rows_mcp')!.median;
  const bare = result.latency.find((row) => row.key === 'bare')!.ms.p50;
  const ms = (value: number) => value.toFixed(2);
  return [
    `claim + complete, ${result.todos} todos per round, median of ${ROUNDS}; the server in its own process`,
    '',
    '| path | todos/s | ratio to the same rows, bare | ratio to the bare MCP server | ratio to graphile-worker | rounds |',
    '| --- | ---: | ---: | ---: | ---: | --- |',
    ...result.throughput.map(
      (row) =>
        `| ${row.label} | ${Math.round(row.median)} | ${(row.median / sameRows).toFixed(2)} | ${(row.median / bareMcp).toFixed(2)} | ${(row.median / graphile).toFixed(2)} | ${row.rounds
          .map((rate) => Math.round(rate))
          .join(' / ')} |`,
    ),
    '',
    'CPU time per todo (ms; median of the rounds, from /proc): the server process, this process (the clients, and graphile-worker itself), PostgreSQL, the whole machine',
    '',
    '| path | server | clients | PostgreSQL | machine |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...result.throughput.map((row) => `| ${row.label} | ${cpuCells(row.cpu)} |`),
    '',
    `one request at a time, ${result.requests} each, kept-alive connection (ms)`,
    '',
    '| request | p50 | p90 | p99 | ratio to bare (p50) |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...result.latency.map(
      (row) =>
        `| ${row.label} | ${ms(row.ms.p50)} | ${ms(row.ms.p90)} | ${ms(row.ms.p99)} | ${(row.ms.p50 / bare).toFixed(2)} |`,
    ),
    describeLoad(...result.load),
  ].join('\n');
}

export function agentPathsSummaryRows(result: AgentPathsResult): SummaryRow[] {
  const rate = (key: PathKey) => result.throughput.find((row) => row.key === key)!.median;
  const lat = (key: LatencyRow['key']) => result.latency.find((row) => row.key === key)!.ms;
  const graphile = `graphile-worker 0.17, concurrency ${WORKERS}: ${formatCount(rate('graphile'))} todos/s`;
  const rows: SummaryRow[] = [];
  const vsSameRows = rate('mcp') / rate('same_rows_mcp');
  rows.push({
    benchmark: `claim + complete, ${WORKERS} MCP clients (Streamable HTTP), ${formatCount(result.todos)} todos — switchboard vs same-rows reference`,
    figure: `${formatCount(rate('mcp'))} todos/s (${loadNote(...result.load)})`,
    baseline: `bare MCP server writing the same rows (same SDK, a token checked per request, leased claim and fenced completion with their history, one statement per call): ${formatCount(rate('same_rows_mcp'))} todos/s`,
    ratio: vsSameRows.toFixed(2),
    target: targetCell(`≥ ${MCP_VS_SAME_ROWS_TARGET}×`, vsSameRows >= MCP_VS_SAME_ROWS_TARGET),
  });
  rows.push({
    benchmark: `claim + complete, ${WORKERS} MCP clients (Streamable HTTP), ${formatCount(result.todos)} todos — vs a bare MCP server`,
    figure: `${formatCount(rate('mcp'))} todos/s`,
    baseline: `bare MCP server (same SDK, one \`UPDATE … SKIP LOCKED\` and one \`UPDATE\`): ${formatCount(rate('bare_mcp'))} todos/s`,
    ratio: (rate('mcp') / rate('bare_mcp')).toFixed(2),
    target: '—',
  });
  for (const [key, target] of [
    ['mcp', MCP_TARGET],
    ['api', API_TARGET],
  ] as const) {
    const ratio = rate(key) / rate('graphile');
    rows.push({
      benchmark: `claim + complete, ${WORKERS} ${key === 'mcp' ? 'MCP clients (Streamable HTTP)' : 'JSON API clients'}, ${formatCount(result.todos)} todos`,
      figure: `${formatCount(rate(key))} todos/s`,
      baseline: graphile,
      ratio: ratio.toFixed(2),
      target: targetCell(`≥ ${target.toFixed(1)}×`, ratio >= target),
    });
  }
  const tool = lat('tool');
  const bare = lat('bare');
  const ratio = tool.p50 / bare.p50;
  rows.push({
    benchmark: 'one MCP tool call (`get_todo`), sequential',
    figure: `p50 ${tool.p50.toFixed(2)} ms, p99 ${tool.p99.toFixed(2)} ms`,
    baseline: `bare \`node:http\` round trip p50 ${bare.p50.toFixed(2)} ms`,
    ratio: ratio.toFixed(2),
    target: targetCell(`≤ ${TOOL_CALL_TARGET}×`, ratio <= TOOL_CALL_TARGET),
  });
  for (const key of ['whoami', 'create', 'mcp_create'] as const) {
    const row = result.latency.find((r) => r.key === key)!;
    rows.push({
      benchmark: `${row.label}, sequential`,
      figure: `p50 ${row.ms.p50.toFixed(2)} ms, p99 ${row.ms.p99.toFixed(2)} ms`,
      baseline: `bare \`node:http\` p50 ${bare.p50.toFixed(2)} ms`,
      ratio: (row.ms.p50 / bare.p50).toFixed(2),
      target: '—',
    });
  }
  return rows;
}

export const agentPathsBenchmark: Benchmark = {
  name: 'agent paths',
  run: async (url) => {
    const result = await runAgentPathsBenchmark(url);
    return { summary: agentPathsSummaryRows(result), details: formatAgentPathsTable(result) };
  },
};

function progress(message: string): void {
  process.stderr.write(`agents: ${message}\n`);
}

runIfMain(import.meta.url, agentPathsBenchmark);

import { chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { connect } from '../../src/platform/db/open-database.js';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';
import { actorFor, type Principal } from '../../src/data/index.js';
import { silentLogger } from '../../src/platform/logger.js';
import { registerTodoTools } from '../../src/surfaces/mcp/todo-tools.js';
import { createTodoService } from '../../src/todos/create-todo-service.js';
import { createCliHome, runCli, type CliHome } from '../cli/support/run-cli.js';
import { startClaudeCode, type ClaudeCode } from '../support/claude-code-client.js';
import { startOwnPostgres, type OwnPostgres } from '../support/own-postgres.js';
import {
  readAdminToken,
  startServerProcess,
  type ServerProcess,
} from '../support/server-process.js';

// PostgreSQL stopped under a running server: every client is told that the database is not
// answering — the API with 503 database_unavailable, the CLI with exit 4, the MCP tools and the
// channel with an isError hint — and none of them sees driver text.

const SECRET = 'database-down-webhook-secret';
const FIXTURES = fileURLToPath(new URL('../fixtures/github/', import.meta.url));
/** What a client must never see: a stack, the driver's words, the database's address. */
const LEAK = /\bat \S+:\d+|ECONN|CONNECTION_|postgres|57P0|127\.0\.0\.1:\d+(?!\/)/i;

let home: CliHome;
let database: OwnPostgres;
let server: ServerProcess | undefined;
let claude: ClaudeCode | undefined;
let env: Record<string, string>;
let admin: string;

beforeAll(async () => {
  [home, database] = await Promise.all([createCliHome(), startOwnPostgres()]);
  await chmod(home.dir, 0o755);
  server = await startServerProcess(await freePort(), {
    ...home.env,
    SWITCHBOARD_DATA_DIR: join(home.dir, 'data'),
    DATABASE_URL: database.url,
    WEBHOOK_SECRET: SECRET,
    LOG_LEVEL: 'warn',
  });
  admin = await readAdminToken(home.env.XDG_CONFIG_HOME!);
  env = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: admin };
  const agent = await api('POST', '/api/v1/agents', { name: 'outage', queues: ['outage'] });
  expect(agent.status).toBe(201);
  // A Claude Code session whose channel was working before the database went away.
  claude = await startClaudeCode({
    SWITCHBOARD_URL: server.url,
    SWITCHBOARD_TOKEN: JSON.parse(agent.body).token,
  });
  expect((await claude.call('list_todos')).isError).toBeFalsy();
  await database.stop();
}, 120_000);
afterAll(async () => {
  await claude?.close();
  if (server?.running()) await server.stop('SIGKILL');
  await database?.remove();
  await home?.remove();
});

async function api(method: string, path: string, body?: unknown) {
  const response = await fetch(`${server!.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${admin}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.text() };
}

describe('with the database stopped', () => {
  test('regression: the CLI said "the server failed: internal error" (exit 1); it names the database and exits 4', async () => {
    for (const args of [
      ['todo', 'list'],
      ['todo', 'list', '--json'],
      ['todo', 'create', '--queue', 'outage', '--title', 'while down'],
    ]) {
      const result = await runCli(args, env);
      expect(result.code, result.stderr).toBe(4);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^[^\n]+\n$/);
      expect(result.stderr).toMatch(/^the server's database is not answering — /);
      expect(result.stderr).not.toMatch(LEAK);
      expect(result.stderr).not.toMatch(/internal error/);
    }
  });

  test('the API answers 503 database_unavailable, with nothing of the driver in it', async () => {
    // (GET /whoami needs no database once the token is known: it is answered from memory.)
    for (const [method, path, body] of [
      ['GET', '/api/v1/todos', undefined],
      ['POST', '/api/v1/todos', { queue: 'outage', title: 'while down' }],
    ] as const) {
      const answer = await api(method, path, body);
      expect(answer.status, `${method} ${path}`).toBe(503);
      expect(JSON.parse(answer.body)).toEqual({
        error: expect.stringMatching(/^the database is not answering/),
        code: 'database_unavailable',
      });
      expect(answer.body).not.toMatch(LEAK);
    }
  });

  test('the channel answers a tool call with the same reason, not "cannot be reached"', async () => {
    const result = await claude!.call('list_todos');
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^switchboard's database is not answering right now/);
    expect(result.text).toMatch(/Try again in a minute/);
    expect(result.text).not.toMatch(/cannot be reached/);
    expect(result.text).not.toMatch(LEAK);
  });

  test('regression: an MCP tool whose database is down says so, rather than "failed inside switchboard"', async () => {
    // The tools as /mcp binds them, over an in-memory pair with a real client: on /mcp itself
    // the bearer token is checked first, so an outage is a 503 before any tool runs.
    const sql = connect(database.url, { schema: 'switchboard', max: 1, log: silentLogger });
    const mcp = new McpServer({ name: 'switchboard', version: 'test' });
    const principal: Principal = {
      id: 1,
      name: 'outage',
      kind: 'agent',
      github_login: null,
      is_admin: false,
      owner: 'admin',
      queues: ['outage'],
      created_at: new Date(),
      revoked_at: null,
    };
    registerTodoTools(mcp, {
      sql,
      todos: createTodoService(sql),
      actor: actorFor(principal, 'mcp'),
      log: silentLogger,
      leases: new Map(),
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'test-agent', version: '1.0.0' });
    try {
      await Promise.all([mcp.connect(serverSide), client.connect(clientSide)]);
      for (const [name, args] of [
        ['list_todos', {}],
        ['claim_next', { queue: 'outage' }],
        ['create_todo', { queue: 'outage', title: 'while down' }],
      ] as const) {
        const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
        const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
        expect(result.isError, name).toBe(true);
        expect(text).toMatch(
          new RegExp(`^switchboard's database is not answering right now, so ${name} may not`),
        );
        expect(text).not.toMatch(/failed inside switchboard/);
        expect(text).not.toMatch(LEAK);
      }
    } finally {
      await client.close();
      await mcp.close();
      await sql.end({ timeout: 1 });
    }
  });

  test('webhook send exits 4: the delivery could not be recorded now, send it later', async () => {
    const result = await runCli(
      ['webhook', 'send', join(FIXTURES, 'ping.json'), '--event', 'ping', '--secret', SECRET],
      env,
    );
    expect(result.code, result.stderr).toBe(4);
    expect(result.stderr).toMatch(/^delivery \S+ not recorded: HTTP 503 — .*redeliver it later\n$/);
  });
});

test('once the database is back, the same commands and calls work, with no restart', async () => {
  await database.start();
  await expect
    .poll(async () => (await runCli(['todo', 'list', '--json'], env)).code, { timeout: 15_000 })
    .toBe(0);
  expect((await api('GET', '/api/v1/todos')).status).toBe(200);
  expect((await claude!.call('list_todos')).isError).toBeFalsy();
  expect(server!.running()).toBe(true);
}, 60_000);

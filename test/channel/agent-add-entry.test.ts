import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createCliHome, parseJson, runCli, type CliHome } from '../cli/support/run-cli.js';
import { startClaudeCode } from '../support/claude-code-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// The .mcp.json entry that `agent add` prints is pasted into other projects: it must start this
// installation's switchboard from wherever Claude Code runs, and never fetch a package by name.

let server: TestServer;
let home: CliHome;
let project: string;

beforeAll(async () => {
  [server, home, project] = await Promise.all([
    startTestServer(),
    createCliHome(),
    mkdtemp(join(tmpdir(), 'switchboard-project-')),
  ]);
});
afterAll(async () => {
  await server?.stop();
  await home?.remove();
  if (project) await rm(project, { recursive: true, force: true });
});

/** Programs that fetch and run a package by its name. */
const PACKAGE_RUNNERS = /(^|\/)(npx|npm|pnpm|pnpx|yarn|bunx|bun|deno)$/;

test('regression: the .mcp.json that agent add printed ran `npx switchboard channel`', async () => {
  const admin = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: server.adminToken };
  const added = parseJson(
    await runCli(['agent', 'add', 'elsewhere', '--queue', 'elsewhere', '--json'], admin),
  );
  const entry = added.mcp_json.mcpServers.switchboard as {
    command: string;
    args: string[];
    env: Record<string, string>;
  };
  expect(entry.env).toEqual({ SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: added.token });

  // An absolute program that exists; every argument a file that exists, or the subcommand.
  expect(isAbsolute(entry.command), entry.command).toBe(true);
  expect(existsSync(entry.command)).toBe(true);
  expect(entry.command).not.toMatch(PACKAGE_RUNNERS);
  expect(entry.args.at(-1)).toBe('channel');
  for (const arg of entry.args.slice(0, -1)) {
    expect(isAbsolute(arg), arg).toBe(true);
    expect(existsSync(arg), arg).toBe(true);
  }

  // Started exactly so, as Claude Code would, from a project directory that is not the checkout
  // and with a PATH on which nothing can be found by name: a working channel.
  const emptyPath = join(project, 'empty-path');
  await mkdir(emptyPath);
  const claude = await startClaudeCode(
    { ...entry.env, PATH: emptyPath },
    { command: entry.command, args: entry.args, cwd: project },
  );
  try {
    const { tools } = await claude.client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('claim_next');
    expect(tools).toHaveLength(12);
    const listed = await claude.call('list_todos', { queue: 'elsewhere' });
    expect(listed.isError, listed.text).toBeFalsy();
    expect(listed.structuredContent).toEqual({ todos: [] });
    expect(claude.errors).toEqual([]);
  } finally {
    await claude.close();
  }
});

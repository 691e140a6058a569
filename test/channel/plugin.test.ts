import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startClaudeCode } from '../support/claude-code-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// The repository doubles as a Claude Code plugin: .claude-plugin/plugin.json, whose mcpServers
// name the channel server. Claude Code sets ${CLAUDE_PLUGIN_ROOT} to the plugin's folder.
const ROOT = resolve(import.meta.dirname, '..', '..');

let server: TestServer;
let project: string;

beforeAll(async () => {
  [server, project] = await Promise.all([
    startTestServer(),
    mkdtemp(join(tmpdir(), 'switchboard-project-')),
  ]);
});
afterAll(async () => {
  await server?.stop();
  if (project) await rm(project, { recursive: true, force: true });
});

interface Entry {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** The plugin's MCP servers where Claude Code looks: plugin.json's mcpServers, else .mcp.json. */
async function pluginServers(): Promise<Record<string, Entry>> {
  const plugin = JSON.parse(await readFile(join(ROOT, '.claude-plugin/plugin.json'), 'utf8'));
  if (plugin.mcpServers) return plugin.mcpServers;
  return JSON.parse(await readFile(join(ROOT, '.mcp.json'), 'utf8')).mcpServers;
}

/** `${NAME}` replaced as Claude Code does it; a variable that is not set fails the test. */
function expand(text: string, vars: Record<string, string>): string {
  return text.replace(/\$\{([A-Z_][A-Z0-9_]*)\}/g, (_, name: string) => {
    if (!(name in vars)) throw new Error(`\${${name}} is not set`);
    return vars[name]!;
  });
}

test('the plugin layout names the channel server the way Claude Code loads it', async () => {
  const plugin = JSON.parse(await readFile(join(ROOT, '.claude-plugin/plugin.json'), 'utf8'));
  const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8'));
  expect(plugin).toMatchObject({
    name: 'switchboard',
    version: pkg.version,
    description: expect.any(String),
  });
  expect(plugin.mcpServers.switchboard).toEqual({
    command: 'node',
    args: ['${CLAUDE_PLUGIN_ROOT}/bin/run.js', 'channel'],
    env: { SWITCHBOARD_URL: '${SWITCHBOARD_URL}', SWITCHBOARD_TOKEN: '${SWITCHBOARD_TOKEN}' },
  });
  expect(pkg.bin).toEqual({ switchboard: 'bin/run.js' });
  // Not in a .mcp.json at the root: Claude Code would also read that as the configuration of
  // any session started in the checkout, where ${CLAUDE_PLUGIN_ROOT} is not set.
  expect(existsSync(join(ROOT, '.mcp.json'))).toBe(false);
});

test("regression: the plugin's .mcp.json ran `npx switchboard channel`", async () => {
  const { body } = await server.api(server.adminToken, 'POST', '/agents', {
    name: 'plugged',
    queues: ['plugged'],
  });
  const vars = {
    CLAUDE_PLUGIN_ROOT: ROOT,
    SWITCHBOARD_URL: server.url,
    SWITCHBOARD_TOKEN: body.token as string,
  };
  const raw = (await pluginServers()).switchboard!;
  const entry: Entry = {
    command: expand(raw.command, vars),
    args: raw.args.map((arg) => expand(arg, vars)),
    env: Object.fromEntries(Object.entries(raw.env).map(([k, v]) => [k, expand(v, vars)])),
  };
  // Node itself, on the plugin's own script: no package is named anywhere.
  expect(entry.command).toBe('node');
  expect(entry.args).toEqual([join(ROOT, 'bin', 'run.js'), 'channel']);
  expect(isAbsolute(entry.args[0]!) && existsSync(entry.args[0]!)).toBe(true);

  // Started so from a project directory elsewhere, with only Node on PATH: a working channel.
  const claude = await startClaudeCode(
    { ...entry.env, PATH: dirname(process.execPath) },
    { command: entry.command, args: entry.args, cwd: project },
  );
  try {
    const { tools } = await claude.client.listTools();
    expect(tools).toHaveLength(12);
    const listed = await claude.call('list_todos');
    expect(listed.isError, listed.text).toBeFalsy();
    expect(claude.errors).toEqual([]);
  } finally {
    await claude.close();
  }
});

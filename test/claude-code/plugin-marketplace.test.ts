import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { claudeHome, type ClaudeHome } from '../support/real-claude-code.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// The repository is its own Claude Code marketplace (.claude-plugin/marketplace.json), listing
// the one plugin it is; checked and installed here by the real Claude Code (the dev dependency).
const ROOT = resolve(import.meta.dirname, '..', '..');

let server: TestServer;
let home: ClaudeHome;

beforeAll(async () => {
  [server, home] = await Promise.all([startTestServer(), claudeHome()]);
});
afterAll(async () => {
  await server?.stop();
  await home?.remove();
});

test('regression: `claude plugin validate .` found no marketplace, and the README no line installing from one', async () => {
  const validated = await home.run(['plugin', 'validate', '--json', ROOT]);
  expect(validated.code, validated.stderr).toBe(0);
  const report = JSON.parse(validated.stdout);
  expect(report.success).toBe(true);
  expect(report.manifest).toMatchObject({
    file: join(ROOT, '.claude-plugin', 'marketplace.json'),
    type: 'marketplace',
    errors: [],
    warnings: [],
  });
  expect(report.provides.mcpServers).toEqual([
    expect.objectContaining({ name: 'switchboard', type: 'stdio', target: 'node' }),
  ]);
  // The advice the validator gave: the README had no `/plugin install` line for the plugin.
  expect(report.advice).toEqual([]);

  const marketplace = JSON.parse(
    await readFile(join(ROOT, '.claude-plugin', 'marketplace.json'), 'utf8'),
  );
  expect(marketplace.plugins).toEqual([
    expect.objectContaining({ name: 'switchboard', source: './' }),
  ]);
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  expect(readme).toContain(`/plugin install switchboard@${marketplace.name}`);
});

test('added as a marketplace and installed from it, the plugin is the channel: Claude Code starts it and it connects', async () => {
  // The checkout as a marketplace, without copying its node_modules: Claude Code copies the
  // folder into its plugin cache (links left out) and runs a folder marketplace's plugin from
  // the folder itself, where these links lead to the built checkout.
  const folder = await mkdtemp(join(tmpdir(), 'switchboard-marketplace-'));
  try {
    await cp(join(ROOT, '.claude-plugin'), join(folder, '.claude-plugin'), { recursive: true });
    for (const name of ['bin', 'dist', 'node_modules', 'package.json', 'README.md'])
      await symlink(join(ROOT, name), join(folder, name));

    const added = await home.run(['plugin', 'marketplace', 'add', folder]);
    expect(added.code, added.stderr).toBe(0);
    const installed = await home.run(['plugin', 'install', 'switchboard@switchboard']);
    expect(installed.code, installed.stderr).toBe(0);
    const listed = JSON.parse((await home.run(['plugin', 'list', '--json'])).stdout);
    expect(listed).toEqual([
      expect.objectContaining({ id: 'switchboard@switchboard', enabled: true }),
    ]);

    const { body } = await server.api(server.adminToken, 'POST', '/agents', {
      name: 'marketed',
      queues: ['marketed'],
    });
    const health = await home.run(['mcp', 'list'], {
      SWITCHBOARD_URL: server.url,
      SWITCHBOARD_TOKEN: body.token as string,
    });
    expect(health.stdout).toMatch(
      /^plugin:switchboard:switchboard: node .*run\.js channel - ✔ Connected$/m,
    );
    // It really asked the server: a token the server refuses stops the channel at its start.
    const refused = await home.run(['mcp', 'list'], {
      SWITCHBOARD_URL: server.url,
      SWITCHBOARD_TOKEN: 'sbk_not-a-token-of-this-server',
    });
    expect(refused.stdout).toMatch(/^plugin:switchboard:switchboard: .* - ✘ Failed to connect/m);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});

test('a copy of the plugin that was never built (cloned from GitHub) says so in one line, and how to build it', async () => {
  const copy = await mkdtemp(join(tmpdir(), 'switchboard-unbuilt-'));
  try {
    await mkdir(join(copy, 'bin'));
    await cp(join(ROOT, 'bin', 'run.js'), join(copy, 'bin', 'run.js'));
    await cp(join(ROOT, 'package.json'), join(copy, 'package.json'));
    const ran = await promisify(execFile)(process.execPath, [
      join(copy, 'bin', 'run.js'),
      'channel',
    ]).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(ran.code).toBe(1);
    expect(ran.stderr).toBe(
      `switchboard: ${copy}/ is not built (no dist/): run 'npm ci' in it, which builds it, then try again\n`,
    );
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
});

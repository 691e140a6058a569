import { readFile } from 'node:fs/promises';
import { expect, test } from 'vitest';

// The repository doubles as a Claude Code plugin: .claude-plugin/plugin.json plus .mcp.json.
test('the plugin layout names the channel server the way Claude Code loads it', async () => {
  const plugin = JSON.parse(await readFile('.claude-plugin/plugin.json', 'utf8'));
  const pkg = JSON.parse(await readFile('package.json', 'utf8'));
  expect(plugin).toMatchObject({
    name: 'switchboard',
    version: pkg.version,
    description: expect.any(String),
  });
  const mcp = JSON.parse(await readFile('.mcp.json', 'utf8'));
  expect(mcp.mcpServers.switchboard).toEqual({
    command: 'npx',
    args: ['switchboard', 'channel'],
    env: { SWITCHBOARD_URL: '${SWITCHBOARD_URL}', SWITCHBOARD_TOKEN: '${SWITCHBOARD_TOKEN}' },
  });
  expect(pkg.bin).toMatchObject({ switchboard: expect.any(String) });
});

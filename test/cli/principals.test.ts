import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { BIN, createCliHome, parseJson, runCli, type CliHome } from './support/run-cli.js';

let server: TestServer;
let home: CliHome;
let admin: Record<string, string>;

beforeAll(async () => {
  [server, home] = await Promise.all([startTestServer(), createCliHome()]);
  admin = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: server.adminToken };
});
afterAll(async () => {
  await server?.stop();
  await home?.remove();
});

describe.concurrent('login and whoami', () => {
  test('login checks the token, then writes the credentials file (0600) the other commands read', async () => {
    const own = await createCliHome();
    try {
      const file = join(own.env.XDG_CONFIG_HOME!, 'switchboard', 'credentials.json');
      const refused = await runCli(['login', '--url', server.url, '--token', 'sbk_wrong'], own.env);
      expect(refused.code).toBe(4);
      await expect(stat(file)).rejects.toThrow();

      const login = await runCli(
        ['login', '--url', `${server.url}/`, '--token', server.adminToken],
        own.env,
      );
      expect(login.code).toBe(0);
      expect(login.stdout).toMatch(
        new RegExp(
          `^logged in to ${server.url} as \\S+ \\(human, admin\\); credentials in ${file}\\n$`,
        ),
      );
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({
        current: server.url,
        servers: { [server.url]: { token: server.adminToken } },
      });

      const whoami = await runCli(['whoami'], own.env);
      expect(whoami).toMatchObject({ code: 0, stderr: '' });
      expect(whoami.stdout).toMatch(new RegExp(`^\\S+ \\(human, admin\\) on ${server.url}\\n$`));
      const json = parseJson(await runCli(['whoami', '--json'], own.env));
      expect(json).toMatchObject({ url: server.url, principal: { kind: 'human', is_admin: true } });
      expect(json.principal).not.toHaveProperty('id');

      const again = parseJson(
        await runCli(
          ['login', '--url', server.url, '--token', server.adminToken, '--json'],
          own.env,
        ),
      );
      expect(again).toMatchObject({
        url: server.url,
        credentials_file: file,
        principal: { kind: 'human' },
      });
    } finally {
      await own.remove();
    }
  });

  test('login refuses what is not an http URL (exit 2)', async () => {
    const result = await runCli(['login', '--url', 'localhost:3000', '--token', 'sbk_x'], home.env);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^--url must be an http\(s\) URL/);
  });
});

describe.concurrent('agents', () => {
  test('add prints the token once and a ready .mcp.json for the HTTP endpoint and the channel', async () => {
    const added = await runCli(
      ['agent', 'add', 'reviewer', '--queue', 'reviews', '--queue', 'ci'],
      admin,
    );
    expect(added).toMatchObject({ code: 0, stderr: '' });
    expect(added.stdout).toMatch(/^added reviewer \(agent of \S+, queues reviews, ci\)\n/);
    const token = /token \(shown once — keep it\): (sbk_\S+)/.exec(added.stdout)![1]!;
    const mcp = JSON.parse(
      added.stdout.slice(added.stdout.indexOf('{'), added.stdout.lastIndexOf('}') + 1),
    );
    expect(mcp).toEqual({
      mcpServers: {
        switchboard: {
          command: process.execPath,
          args: [BIN, 'channel'],
          env: { SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: token },
        },
        'switchboard-http': {
          type: 'http',
          url: `${server.url}/mcp`,
          headers: { Authorization: `Bearer ${token}` },
        },
      },
    });
    const whoami = parseJson(
      await runCli(['whoami', '--json'], { ...admin, SWITCHBOARD_TOKEN: token }),
    );
    expect(whoami.principal).toMatchObject({
      name: 'reviewer',
      kind: 'agent',
      queues: ['reviews', 'ci'],
    });
  });

  test('add --json, list, revoke — and a revoked token no longer works', async () => {
    const added = parseJson(
      await runCli(['agent', 'add', 'short-lived', '--queue', 'ci', '--json'], admin),
    );
    expect(added).toMatchObject({
      agent: { name: 'short-lived', kind: 'agent', queues: ['ci'], revoked_at: null },
      token: expect.stringMatching(/^sbk_/),
      mcp_json: { mcpServers: { 'switchboard-http': { url: `${server.url}/mcp` } } },
    });

    const listed = parseJson(await runCli(['agent', 'list', '--json'], admin));
    expect(listed.agents.map((agent: { name: string }) => agent.name)).toContain('short-lived');
    const table = await runCli(['agent', 'list'], admin);
    expect(table.stdout).toMatch(/^NAME\s+OWNER\s+QUEUES\s+STATUS\s+CREATED\n/);
    expect(table.stdout).toMatch(/\nshort-lived\s+\S+\s+ci\s+active\s+\S+/);

    const revoked = await runCli(['agent', 'revoke', 'short-lived'], admin);
    expect(revoked).toMatchObject({
      code: 0,
      stdout: 'revoked short-lived: its tokens no longer work\n',
    });
    const json = parseJson(await runCli(['agent', 'revoke', 'short-lived', '--json'], admin));
    expect(json.agent.revoked_at).toEqual(expect.any(String));
    const after = await runCli(['todo', 'list'], { ...admin, SWITCHBOARD_TOKEN: added.token });
    expect(after.code).toBe(4);
  });

  test('refusals: a taken name, an agent that does not exist, an agent adding agents (exit 3)', async () => {
    await runCli(['agent', 'add', 'taken', '--queue', 'ci'], admin);
    const taken = await runCli(['agent', 'add', 'taken', '--queue', 'ci'], admin);
    expect(taken.code).toBe(3);
    expect(taken.stderr).toBe('the name taken is taken\n');
    expect((await runCli(['agent', 'revoke', 'nobody'], admin)).code).toBe(3);
    const { body } = await server.api(server.adminToken, 'POST', '/agents', {
      name: 'plain',
      queues: ['ci'],
    });
    const byAgent = await runCli(['agent', 'add', 'sub', '--queue', 'ci'], {
      ...admin,
      SWITCHBOARD_TOKEN: body.token,
    });
    expect(byAgent.code).toBe(3);
    expect(byAgent.stderr).toBe('only a human may add agents\n');
  });
});

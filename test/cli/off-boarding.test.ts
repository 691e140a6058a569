import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { createCliHome, parseJson, runCli, type CliHome } from './support/run-cli.js';

let server: TestServer;
let home: CliHome;

beforeAll(async () => {
  [server, home] = await Promise.all([startTestServer(), createCliHome()]);
});
afterAll(async () => {
  await server?.stop();
  await home?.remove();
});

/** The CLI as the holder of `token`. */
const as = (token: string) => ({
  ...home.env,
  SWITCHBOARD_URL: server.url,
  SWITCHBOARD_TOKEN: token,
});
const admin = () => as(server.adminToken);

async function addHuman(name: string, extra: { is_admin?: boolean } = {}): Promise<string> {
  const added = parseJson(
    await runCli(['human', 'add', name, ...(extra.is_admin ? ['--admin'] : []), '--json'], admin()),
  );
  return added.token;
}

async function addAgent(owner: string, name: string): Promise<string> {
  return parseJson(await runCli(['agent', 'add', name, '--queue', 'reviews', '--json'], as(owner)))
    .token;
}

describe.concurrent('human set, show, deactivate and reactivate', () => {
  test('a human sets their own backup, shown by human show; a bad one is refused in one line', async () => {
    const ann = await addHuman('ann');
    await addHuman('ben');
    const set = await runCli(['human', 'set', 'ann', '--backup', 'ben'], as(ann));
    expect(set).toMatchObject({ code: 0, stderr: '' });
    expect(set.stdout).toMatch(/^ann\n {2}status: +active\n/);
    expect(set.stdout).toContain('  backup:       ben\n');
    const shown = parseJson(await runCli(['human', 'show', 'ann', '--json'], as(ann)));
    expect(shown.human).toMatchObject({ name: 'ann', backup: 'ben', backup_for: [], agents: [] });
    expect(shown.human).not.toHaveProperty('id');
    expect((await runCli(['human', 'show', 'ben'], admin())).stdout).toContain(
      '  backup for:   ann\n',
    );

    const cleared = parseJson(
      await runCli(['human', 'set', 'ann', '--backup', 'none', '--json'], admin()),
    );
    expect(cleared.human.backup).toBeNull();

    for (const [args, code, line] of [
      [['human', 'set', 'ann'], 2, /^give a setting to change: --backup OTHER\|none/],
      [['human', 'set', 'ann', '--backup', 'Ben'], 2, /^--backup must be lowercase/],
      [['human', 'set', 'ann', '--backup', 'ann'], 3, /^ann cannot be their own backup\n$/],
      [
        ['human', 'set', 'ben', '--backup', 'ann'],
        3,
        /^only an admin may change another human's settings\n$/,
      ],
      [['human', 'show', 'ben'], 3, /^no human named ben\n$/],
    ] as const) {
      const refused = await runCli([...args], as(ann));
      expect(refused.code, args.join(' ')).toBe(code);
      expect(refused.stderr).toMatch(line);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  test('an admin deactivates a human: their agents and tokens stop at once, their approvals go to their backup', async () => {
    const cas = await addHuman('cas');
    await addHuman('dot');
    const bot = await addAgent(cas, 'cas-bot');
    const asked = parseJson(
      await runCli(['approval', 'request', 'May I merge?', '--json'], as(bot)),
    ).todo;
    expect((await runCli(['human', 'set', 'cas', '--backup', 'dot'], admin())).code).toBe(0);

    const deactivated = await runCli(['human', 'deactivate', 'cas'], admin());
    expect(deactivated).toMatchObject({ code: 0, stderr: '' });
    expect(deactivated.stdout).toBe(
      'deactivated cas: 2 tokens revoked, 0 sign-ins and 0 console sessions ended; agents revoked: cas-bot\n' +
        `  approval #${asked.id} now waits for dot — May I merge?\n`,
    );
    for (const token of [cas, bot]) {
      const refused = await runCli(['whoami'], as(token));
      expect(refused.code).toBe(4);
    }
    const shown = parseJson(await runCli(['todo', 'show', String(asked.id), '--json'], admin()));
    expect(shown.todo.assignee).toBe('dot');
    expect(shown.history).toContainEqual(
      expect.objectContaining({
        action: 'reassigned',
        data: expect.objectContaining({ from: 'cas', to: 'dot' }),
      }),
    );

    const again = await runCli(['human', 'deactivate', 'cas'], admin());
    expect(again.code).toBe(3);
    expect(again.stderr).toMatch(/^cas is already deactivated \(since .+\)\n$/);
    const json = parseJson(await runCli(['human', 'reactivate', 'cas', '--json'], admin()));
    expect(json).toMatchObject({ human: { name: 'cas', revoked_at: null } });
    const back = await runCli(['whoami'], as(json.token));
    expect(back).toMatchObject({ code: 0 });
    expect(back.stdout).toMatch(/^cas \(human\) on /);
  });

  test('who may not is refused in one line (exit 3): a human who is not an admin, the last admin', async () => {
    const eve = await addHuman('eve');
    const refused = await runCli(['human', 'deactivate', 'eve'], as(eve));
    expect(refused).toMatchObject({
      code: 3,
      stdout: '',
      stderr: 'only an admin may deactivate humans\n',
    });
    // The first start's admin is the only admin here: they may not deactivate themself.
    const { stdout } = await runCli(['whoami', '--json'], admin());
    const first = JSON.parse(stdout).principal.name as string;
    const last = await runCli(['human', 'deactivate', first], admin());
    expect(last).toMatchObject({
      code: 3,
      stderr: `${first} is the last admin: make another human an admin first, then deactivate ${first}\n`,
    });
    expect((await runCli(['whoami'], admin())).code).toBe(0);
  });
});

describe.concurrent('token list and revoke', () => {
  test('lists kinds, principals and use, never a secret; revoking one ends it at once', async () => {
    const fay = await addHuman('fay');
    const bot = await addAgent(fay, 'fay-bot');
    const list = await runCli(['token', 'list'], as(fay));
    expect(list).toMatchObject({ code: 0, stderr: '' });
    const [header, ...rows] = list.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID +KIND +PRINCIPAL +CREATED +LAST USED +STATUS$/);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatch(/^\d+ +agent_add +fay-bot \(agent of fay\) +\S+ +(never|\S+) +works$/);
    expect(rows[1]).toMatch(/^\d+ +human_add +fay +\S+ +\S+ +works$/);
    for (const secret of [fay, bot]) expect(list.stdout).not.toContain(secret.slice(4));

    const { tokens } = parseJson(await runCli(['token', 'list', '--json'], as(fay)));
    const agentToken = tokens.find((token: { kind: string }) => token.kind === 'agent_add');
    expect(
      parseJson(await runCli(['token', 'list', '--human', 'fay', '--json'], admin())).tokens,
    ).toEqual(tokens);
    const other = await runCli(['token', 'list', '--human', 'eve'], as(fay));
    expect(other).toMatchObject({
      code: 3,
      stderr: "only an admin may list another human's tokens\n",
    });

    const revoked = await runCli(['token', 'revoke', String(agentToken.id)], as(fay));
    expect(revoked).toMatchObject({
      code: 0,
      stdout: `revoked token #${agentToken.id} (agent_add) of fay-bot: it no longer works\n`,
    });
    expect((await runCli(['whoami'], as(bot))).code).toBe(4);
    const twice = await runCli(['token', 'revoke', String(agentToken.id)], as(fay));
    expect(twice.code).toBe(3);
    expect(twice.stderr).toMatch(new RegExp(`^token #${agentToken.id} was already revoked at `));
    const all = parseJson(await runCli(['token', 'list', '--all', '--json'], as(fay)));
    expect(all.tokens).toHaveLength(2);
    expect((await runCli(['token', 'revoke', 'abc'], as(fay))).code).toBe(2);
    const foreign = await runCli(
      ['token', 'revoke', String(agentToken.id)],
      as(await addHuman('gil')),
    );
    expect(foreign).toMatchObject({
      code: 3,
      stderr: `no token #${agentToken.id} of yours or your agents'\n`,
    });
  });

  test("logout of a token no sign-in made says it still works, and points at token list and revoke, not 'agent revoke'", async () => {
    const own = await createCliHome();
    try {
      const hugh = await addHuman('hugh');
      expect((await runCli(['login', '--url', server.url, '--token', hugh], own.env)).code).toBe(0);
      const logout = await runCli(['logout'], own.env);
      expect(logout.code).toBe(0);
      expect(logout.stdout).toContain(
        "still works — it did not come from a sign-in; 'switchboard token list' shows it and 'switchboard token revoke ID' ends it",
      );
      expect(logout.stdout).not.toContain('agent revoke');
    } finally {
      await own.remove();
    }
  });
});

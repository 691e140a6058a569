import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { createCliHome, parseJson, runCli, type CliHome } from './support/run-cli.js';

let server: TestServer;
let home: CliHome;
/** The admin human, through the environment. */
let admin: Record<string, string>;
/** An agent working queues `agent-q` and `keyed-q`, owned by the admin. */
let agent: Record<string, string>;

beforeAll(async () => {
  [server, home] = await Promise.all([startTestServer(), createCliHome()]);
  admin = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: server.adminToken };
  const added = await server.api(server.adminToken, 'POST', '/agents', {
    name: 'cli-agent',
    queues: ['agent-q', 'keyed-q'],
  });
  agent = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: added.body.token };
});
afterAll(async () => {
  await server?.stop();
  await home?.remove();
});

/** A timestamp as the API gives it and `todo show` prints it: ISO-8601, UTC. */
const ISO = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z';

const create = async (queue: string, title = 'a todo', env = admin) =>
  parseJson(await runCli(['todo', 'create', '--queue', queue, '--title', title, '--json'], env))
    .todo as { id: number };

describe.concurrent('todo commands, human output and --json', () => {
  test('create, then create again with the same key', async () => {
    const human = await runCli(
      ['todo', 'create', '--queue', 'create-q', '--title', 'Review PR #482', '--body', 'please'],
      admin,
    );
    expect(human).toMatchObject({ code: 0, stderr: '' });
    expect(human.stdout).toMatch(/^created #\d+ pending on create-q — Review PR #482\n$/);

    const first = await runCli(
      [
        'todo',
        'create',
        '--queue',
        'keyed-q',
        '--title',
        'keyed',
        '--key',
        'k-1',
        '--kind',
        'ci.flake',
        '--assignee',
        'cli-agent',
        '--json',
      ],
      admin,
    );
    expect(first.code).toBe(0);
    expect(parseJson(first)).toMatchObject({
      created: true,
      todo: {
        queue: 'keyed-q',
        kind: 'ci.flake',
        idempotency_key: 'k-1',
        assignee: 'cli-agent',
        source: 'cli',
      },
    });
    const again = await runCli(
      ['todo', 'create', '--queue', 'keyed-q', '--title', 'keyed', '--key', 'k-1'],
      admin,
    );
    expect(again.stdout).toContain(`exists already: #${parseJson(first).todo.id} `);
  });

  test('list: table, --json, filters', async () => {
    const a = await create('list-q', 'first on list-q');
    const b = await create('list-q', 'second on list-q');
    const human = await runCli(['todo', 'list', '--queue', 'list-q'], admin);
    expect(human.code).toBe(0);
    const lines = human.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+STATE\s+QUEUE\s+KIND\s+WHO\s+AGE\s+TITLE$/);
    expect(lines.slice(1).map((line) => line.split(/\s+/)[0])).toEqual([`#${b.id}`, `#${a.id}`]);

    const json = parseJson(
      await runCli(['todo', 'list', '--queue', 'list-q', '--limit', '1', '--json'], admin),
    );
    expect(json.todos.map((todo: { id: number }) => todo.id)).toEqual([b.id]);
    expect(Object.keys(json)).toEqual(['todos']);

    const none = await runCli(['todo', 'list', '--queue', 'list-q', '--state', 'done'], admin);
    expect(none.stdout).toBe('no todos\n');
    expect(
      parseJson(await runCli(['todo', 'list', '--queue', 'nothing-here', '--json'], admin)),
    ).toEqual({ todos: [] });
  });

  test('list --mine: what is assigned to or held by the caller', async () => {
    const assigned = parseJson(
      await runCli(
        [
          'todo',
          'create',
          '--queue',
          'agent-q',
          '--title',
          'for the agent',
          '--assignee',
          'cli-agent',
          '--json',
        ],
        admin,
      ),
    ).todo;
    await create('agent-q', 'for anyone');
    const mine = parseJson(
      await runCli(['todo', 'list', '--mine', '--queue', 'agent-q', '--json'], agent),
    );
    expect(mine.todos.map((todo: { id: number }) => todo.id)).toEqual([assigned.id]);
  });

  test('show: the todo and its history', async () => {
    const { id } = await create('show-q', 'shown');
    await runCli(['todo', 'claim', String(id)], admin);
    const human = await runCli(['todo', 'show', String(id)], admin);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`#${id} shown`);
    expect(human.stdout).toMatch(/state:\s+claimed/);
    expect(human.stdout).toMatch(/History\n\s+WHEN\s+WHO\s+VIA\s+WHAT/);
    expect(human.stdout).toMatch(/\(human\)\s+cli\s+created/);
    expect(human.stdout).toMatch(/\(human\)\s+cli\s+claimed/);

    const json = parseJson(await runCli(['todo', 'show', String(id), '--json'], admin));
    expect(json.todo).toMatchObject({ id, state: 'claimed' });
    // Other parts of the server add their own entries (deliveries); the CLI's are these.
    const byCli = json.history.filter((event: { via: string }) => event.via === 'cli');
    expect(byCli.map((event: { action: string }) => event.action)).toEqual(['created', 'claimed']);
  });

  test('claim by queue, heartbeat, complete with a JSON result — the lease token is kept locally', async () => {
    const { id } = await create('work-q', 'to be done');
    const claimed = await runCli(['todo', 'claim', '--queue', 'work-q', '--lease', '60'], admin);
    expect(claimed.code).toBe(0);
    expect(claimed.stdout).toMatch(
      new RegExp(`^claimed #${id} claimed on work-q — to be done \\(lease until ${ISO}\\)\\n$`),
    );

    const beat = parseJson(
      await runCli(['todo', 'heartbeat', String(id), '--lease', '600', '--json'], admin),
    );
    expect(Date.parse(beat.todo.lease_expires_at)).toBeGreaterThan(Date.now() + 500_000);
    expect((await runCli(['todo', 'heartbeat', String(id)], admin)).stdout).toMatch(
      /^#\d+ claimed on work-q/,
    );

    const resultFile = join(home.dir, 'result.json');
    await writeFile(resultFile, '{"approved": true, "nits": 2}');
    const done = await runCli(
      ['todo', 'complete', String(id), '--summary', 'LGTM', '--result', `@${resultFile}`, '--json'],
      admin,
    );
    expect(done.code).toBe(0);
    expect(parseJson(done).todo).toMatchObject({
      id,
      state: 'done',
      summary: 'LGTM',
      result: { approved: true, nits: 2 },
    });

    // The lease ended, so its token was forgotten: a second completion is refused, saying why.
    const again = await runCli(['todo', 'complete', String(id)], admin);
    expect(again).toMatchObject({
      code: 3,
      stderr: `#${id} is done already — nobody holds it any more\n`,
    });
  });

  test('claim --json carries the lease token; --lease-token and SWITCHBOARD_LEASE_TOKEN serve another machine', async () => {
    const { id } = await create('token-q');
    const claimed = parseJson(await runCli(['todo', 'claim', String(id), '--json'], admin));
    const token: string = claimed.todo.lease_token;
    expect(token).toMatch(/^[0-9a-f-]{36}$/);
    // Another machine: a home without the saved token.
    const elsewhere = await createCliHome();
    try {
      const env = { ...admin, ...elsewhere.env };
      expect((await runCli(['todo', 'heartbeat', String(id)], env)).code).toBe(3);
      expect(
        (await runCli(['todo', 'heartbeat', String(id), '--lease-token', token], env)).code,
      ).toBe(0);
      const released = await runCli(['todo', 'release', String(id), '--json'], {
        ...env,
        SWITCHBOARD_LEASE_TOKEN: token,
      });
      expect(parseJson(released).todo).toMatchObject({ id, state: 'pending' });
    } finally {
      await elsewhere.remove();
    }
  });

  test('fail and release', async () => {
    const failing = await create('fail-q', 'will fail');
    await runCli(['todo', 'claim', String(failing.id)], admin);
    const failed = await runCli(
      ['todo', 'fail', String(failing.id), '--reason', 'tests time out'],
      admin,
    );
    expect(failed.code).toBe(0);
    expect(failed.stdout).toMatch(
      new RegExp(`^#\\d+ failed on fail-q — will fail \\(attempt 1/5, retry at ${ISO}\\)\\n$`),
    );
    const shown = parseJson(await runCli(['todo', 'show', String(failing.id), '--json'], admin));
    expect(shown.todo.summary).toBe('tests time out');

    const releasing = await create('release-q', 'given back');
    await runCli(['todo', 'claim', String(releasing.id)], admin);
    const released = await runCli(['todo', 'release', String(releasing.id)], admin);
    expect(released).toMatchObject({
      code: 0,
      stdout: `#${releasing.id} pending on release-q — given back\n`,
    });
  });

  test('claim on an empty queue: a line, {"todo":null}, exit 0 — with or without --wait', async () => {
    expect(await runCli(['todo', 'claim', '--queue', 'empty-q'], admin)).toMatchObject({
      code: 0,
      stdout: 'no pending todo on empty-q\n',
      stderr: '',
    });
    const json = await runCli(['todo', 'claim', '--queue', 'empty-q', '--json'], admin);
    expect(json.code).toBe(0);
    expect(parseJson(json)).toEqual({ todo: null });
    const waited = await runCli(
      ['todo', 'claim', '--queue', 'empty-q', '--wait', '1', '--json'],
      admin,
    );
    expect(waited.code).toBe(0);
    expect(parseJson(waited)).toEqual({ todo: null });
  });

  test('approve and deny an approval; the second verdict is refused (exit 3)', async () => {
    const ask = async (question: string) =>
      (await server.api(agent.SWITCHBOARD_TOKEN!, 'POST', '/approvals', { question })).body
        .todo as { id: number };
    const [one, two] = [await ask('May I run rm -rf build/?'), await ask('May I push to main?')];

    const waiting = parseJson(
      await runCli(['todo', 'list', '--mine', '--queue', 'approvals', '--json'], admin),
    );
    expect(waiting.todos.map((todo: { id: number }) => todo.id)).toEqual(
      expect.arrayContaining([one.id, two.id]),
    );

    const approved = await runCli(['todo', 'approve', String(one.id), '--note', 'fine'], admin);
    expect(approved).toMatchObject({ code: 0, stderr: '' });
    expect(approved.stdout).toMatch(
      /^#\d+ allowed by \S+ — May I run rm -rf build\/\? \(note: fine\)\n$/,
    );
    const denied = parseJson(
      await runCli(['todo', 'deny', String(two.id), '--note', 'not main', '--json'], admin),
    );
    expect(denied.todo).toMatchObject({ id: two.id, verdict: 'deny' });

    const second = await runCli(['todo', 'deny', String(one.id)], admin);
    expect(second.code).toBe(3);
    expect(second.stdout).toBe('');
    expect(second.stderr.trim().split('\n')).toHaveLength(1);
  });

  test("reply: a message in the todo's history", async () => {
    const { id } = await create('reply-q');
    const replied = await runCli(['todo', 'reply', String(id), '--text', 'use staging'], admin);
    expect(replied).toMatchObject({ code: 0, stdout: `replied on #${id}\n`, stderr: '' });
    const json = parseJson(
      await runCli(['todo', 'reply', String(id), '--text', 'and then prod', '--json'], admin),
    );
    expect(json).toMatchObject({ todo: { id }, text: 'and then prod' });
    const { history } = parseJson(await runCli(['todo', 'show', String(id), '--json'], admin));
    expect(
      history
        .filter((event: { action: string }) => event.action === 'replied')
        .map((event: any) => event.data.text),
    ).toEqual(['use staging', 'and then prod']);
  });
});

describe.concurrent('refusals by the ledger exit 3 with one line on stderr', () => {
  test('a todo that does not exist', async () => {
    for (const json of [[], ['--json']]) {
      const result = await runCli(['todo', 'show', '999999', ...json], admin);
      expect(result).toMatchObject({ code: 3, stdout: '', stderr: 'todo #999999 not found\n' });
    }
  });

  test('claiming a todo someone holds', async () => {
    const { id } = await create('held-q');
    expect((await runCli(['todo', 'claim', String(id)], admin)).code).toBe(0);
    const second = await runCli(['todo', 'claim', String(id), '--json'], admin);
    expect(second.code).toBe(3);
    expect(second.stdout).toBe('');
    expect(second.stderr).toMatch(/claimed by/);
  });

  test('a lease token that is not the current one (lease_lost)', async () => {
    const { id } = await create('lost-q');
    await runCli(['todo', 'claim', String(id)], admin);
    const result = await runCli(
      ['todo', 'complete', String(id), '--lease-token', '00000000-0000-4000-8000-000000000000'],
      admin,
    );
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/^lease on todo #\d+ is lost/);
  });

  test('an agent may not decide an approval', async () => {
    const { body } = await server.api(agent.SWITCHBOARD_TOKEN!, 'POST', '/approvals', {
      question: 'May I?',
    });
    const result = await runCli(['todo', 'approve', String(body.todo.id)], agent);
    expect(result.code).toBe(3);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });

  test('bad input only the server can judge (invalid)', async () => {
    const result = await runCli(
      ['todo', 'create', '--queue', 'q', '--title', 'x', '--assignee', 'nobody-here'],
      admin,
    );
    expect(result).toMatchObject({ code: 3, stderr: 'no principal named nobody-here\n' });
  });
});

test('the lease store keeps one private file per lease, under XDG_STATE_HOME', async () => {
  const own = await createCliHome();
  try {
    const env = { ...admin, ...own.env };
    const { id } = await create('store-q', 'stored', env);
    await runCli(['todo', 'claim', String(id)], env);
    const dir = join(own.env.XDG_STATE_HOME!, 'switchboard', 'leases');
    const files = await readdir(dir);
    expect(files).toHaveLength(1);
    const { stat } = await import('node:fs/promises');
    expect((await stat(join(dir, files[0]!))).mode & 0o777).toBe(0o600);
    await runCli(['todo', 'release', String(id)], env);
    expect(await readdir(dir)).toEqual([]);
  } finally {
    await own.remove();
  }
});

describe.concurrent('small things a user trips on', () => {
  const ask = async (question: string) =>
    (await server.api(agent.SWITCHBOARD_TOKEN!, 'POST', '/approvals', { question })).body.todo as {
      id: number;
    };

  test("regression: todo show '#7' is refused although the CLI prints ids as #7", async () => {
    const { id } = await create('hash-q', 'by its printed id');
    for (const command of [
      ['todo', 'show', `#${id}`],
      ['todo', 'claim', `#${id}`],
      ['todo', 'release', `#${id}`],
    ]) {
      const result = await runCli(command, admin);
      expect(result, command.join(' ')).toMatchObject({ code: 0, stderr: '' });
    }
    const bad = await runCli(['todo', 'show', '#x'], admin);
    expect(bad).toMatchObject({ code: 2, stdout: '' });
    expect(bad.stderr).toMatch(/^"#x" is not a todo id \(42, or '#42'\)/);
  });

  test('regression: todo list --mine shows the assignee (me) of an approval, not who asks, and no expiry', async () => {
    const { id } = await ask('May I tag the release?');
    const mine = await runCli(['todo', 'list', '--mine', '--queue', 'approvals'], admin);
    expect(mine.code).toBe(0);
    const [header, ...rows] = mine.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID\s+STATE\s+QUEUE\s+KIND\s+WHO\s+AGE\s+EXPIRES\s+TITLE$/);
    expect(rows.find((row) => row.startsWith(`#${id} `))).toMatch(
      /^#\d+\s+pending\s+approvals\s+approval\s+cli-agent asks\s+\d+s\s+in 1[45]m\s+May I tag the release\?$/,
    );
    // Without approvals in the list, no EXPIRES column.
    await create('plain-q', 'no approval here');
    const plain = await runCli(['todo', 'list', '--queue', 'plain-q'], admin);
    expect(plain.stdout.split('\n')[0]).toMatch(/^ID\s+STATE\s+QUEUE\s+KIND\s+WHO\s+AGE\s+TITLE$/);
  });

  test('regression: a denied approval prints as "done … (verdict deny …)", not its verdict first', async () => {
    const { id } = await ask('May I drop the table?');
    const denied = await runCli(
      ['todo', 'deny', String(id), '--note', 'not on\nproduction'],
      admin,
    );
    expect(denied).toMatchObject({ code: 0, stderr: '' });
    expect(denied.stdout).toMatch(
      new RegExp(
        `^#${id} denied by \\S+ — May I drop the table\\? \\(note: not on production\\)\\n$`,
      ),
    );
  });

  test('regression: todo claim prints a local time without date or zone, unlike show', async () => {
    const { id } = await create('clock-q', 'what time is it');
    const claimed = await runCli(['todo', 'claim', String(id)], admin);
    const until = /\(lease until (\S+)\)/.exec(claimed.stdout)?.[1];
    expect(until).toMatch(new RegExp(`^${ISO}$`));
    const shown = await runCli(['todo', 'show', String(id)], admin);
    expect(shown.stdout).toContain(`lease until:   ${until}\n`);
  });

  test("regression: a multi-line summary breaks todo show's layout", async () => {
    const { id } = await create('summary-q', 'summed up');
    await runCli(['todo', 'claim', String(id)], admin);
    await runCli(
      ['todo', 'complete', String(id), '--summary', 'first line\nsecond line\n\nlast line'],
      admin,
    );
    const shown = await runCli(['todo', 'show', String(id)], admin);
    expect(shown.stdout).toContain(
      [
        '  summary:       first line',
        '                 second line',
        '                 ',
        '                 last line',
        '  created:',
      ].join('\n'),
    );
  });

  test('todo list pages with --before', async () => {
    const made = [];
    for (let i = 0; i < 3; i++) made.push((await create('page-q', `page ${i}`)).id);
    const first = await runCli(['todo', 'list', '--queue', 'page-q', '--limit', '2'], admin);
    expect(first.stdout.trimEnd().split('\n').at(-1)).toBe(
      `(older todos: --before ${made[1]} lists the next page)`,
    );
    const next = parseJson(
      await runCli(
        ['todo', 'list', '--queue', 'page-q', '--limit', '2', '--before', `#${made[1]}`, '--json'],
        admin,
      ),
    );
    expect(next.todos.map((todo: { id: number }) => todo.id)).toEqual([made[0]]);
  });
});

describe.concurrent('issue 20: what a new user tripped on', () => {
  test("regression: no way to attach a link to a todo (--url is the server's)", async () => {
    const link = 'https://github.com/acme/api/pull/1';
    const created = await runCli(
      ['todo', 'create', '--queue', 'link-q', '--title', 'Review PR #1', '--link', link, '--json'],
      admin,
    );
    expect(created.code).toBe(0);
    const { todo } = parseJson(created);
    expect(todo).toMatchObject({ title: 'Review PR #1', url: link });

    const shown = await runCli(['todo', 'show', String(todo.id)], admin);
    expect(shown.stdout).toContain(`  url:           ${link}\n`);
    const listed = await runCli(['todo', 'list', '--queue', 'link-q'], admin);
    expect(listed.stdout.trimEnd().split('\n')[1]).toMatch(
      new RegExp(`^#${todo.id}\\s.*\\sReview PR #1 <${link}>$`),
    );

    const bad = await runCli(
      ['todo', 'create', '--queue', 'link-q', '--title', 'x', '--link', 'javascript:alert(1)'],
      admin,
    );
    expect(bad).toMatchObject({
      code: 2,
      stdout: '',
      stderr:
        '--link must be an http(s) URL, e.g. https://github.com/acme/api/pull/1, not "javascript:alert(1)"\n',
    });
  });

  test('regression: a 5,000-character title is cut to 200 without a word', async () => {
    const title = 'x'.repeat(5000);
    const result = await runCli(
      ['todo', 'create', '--queue', 'long-q', '--title', title, '--json'],
      admin,
    );
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(
      'note: --title is 5,000 characters; a todo keeps the first 200 and cuts the rest — put the rest in --body\n',
    );
    expect(Array.from(parseJson(result).todo.title as string)).toHaveLength(200);

    const fits = await runCli(
      ['todo', 'create', '--queue', 'long-q', '--title', 'y'.repeat(200)],
      admin,
    );
    expect(fits).toMatchObject({ code: 0, stderr: '' });
  });

  test("regression: a 120 KB --body is refused with zod's raw message, not the limit in words", async () => {
    const result = await runCli(
      ['todo', 'create', '--queue', 'body-q', '--title', 'huge', '--body', 'b'.repeat(120 * 1024)],
      admin,
    );
    expect(result).toMatchObject({
      code: 2,
      stdout: '',
      stderr:
        '--body is 122,880 characters, over the 65,536 a request may carry (a todo keeps 16,384) — shorten it, or put the text elsewhere and attach it with --link URL\n',
    });
    expect(await server.sql`select 1 from todos where queue = 'body-q'`).toHaveLength(0);

    // Accepted, but cut: said so.
    const cut = await runCli(
      ['todo', 'create', '--queue', 'body-q', '--title', 'long', '--body', 'b'.repeat(20_000)],
      admin,
    );
    expect(cut.code).toBe(0);
    expect(cut.stderr).toMatch(
      /^note: --body is 20,000 characters; a todo keeps the first 16,384 /,
    );
  });

  test('regression: todo complete on a done or missing todo says "no lease token … claim it here first"', async () => {
    const missing = await runCli(['todo', 'complete', '999999'], admin);
    expect(missing).toMatchObject({ code: 3, stdout: '', stderr: 'todo #999999 not found\n' });

    const waiting = await create('nolease-q', 'nobody holds me');
    expect(await runCli(['todo', 'fail', String(waiting.id)], admin)).toMatchObject({
      code: 3,
      stderr: `#${waiting.id} is pending: nobody holds it — claim it first ('switchboard todo claim ${waiting.id}')\n`,
    });

    const canceled = await create('nolease-q', 'not needed');
    await runCli(['todo', 'cancel', String(canceled.id)], admin);
    expect(await runCli(['todo', 'complete', String(canceled.id)], admin)).toMatchObject({
      code: 3,
      stderr: `#${canceled.id} is canceled — nobody holds it any more\n`,
    });

    // Held by someone else, and held by the caller from elsewhere: the agent claims on a
    // machine of its own (a home whose lease store no other command here shares).
    const [agentsMachine, elsewhere] = await Promise.all([createCliHome(), createCliHome()]);
    try {
      const theirs = await create('agent-q', 'the agent holds this');
      const claimed = await runCli(['todo', 'claim', String(theirs.id)], {
        ...agent,
        ...agentsMachine.env,
      });
      expect(claimed.code).toBe(0);
      expect(await runCli(['todo', 'heartbeat', String(theirs.id)], admin)).toMatchObject({
        code: 3,
        stderr: `#${theirs.id} is claimed by cli-agent, not by you\n`,
      });
      const result = await runCli(['todo', 'release', String(theirs.id)], {
        ...agent,
        ...elsewhere.env,
      });
      expect(result).toMatchObject({
        code: 3,
        stderr: `#${theirs.id} is claimed by you, but not from this machine: pass the lease token from where you claimed it with --lease-token (or SWITCHBOARD_LEASE_TOKEN)\n`,
      });
    } finally {
      await Promise.all([agentsMachine.remove(), elsewhere.remove()]);
    }
  });
});

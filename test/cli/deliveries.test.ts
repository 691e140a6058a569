import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { deliver, readFixture } from '../github/deliver.js';
import {
  addSource,
  postToSource,
  readSourceFixture,
  setRules,
  standardHeaders,
} from '../providers/support/sources.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { createCliHome, parseJson, runCli, type CliHome } from './support/run-cli.js';

// `deliveries list`, `show` and `explain`, run as a user runs them, against a real server that
// has no GitHub App credentials (so explain runs GitHub's default rules, and says so) and a
// Standard Webhooks source (whose rules are changed, so explain sees today's).

let server: TestServer;
let home: CliHome;
let admin: Record<string, string>;
let agent: Record<string, string>;
/** The row ids of what was delivered, by what it is. */
const ids: Record<string, number> = {};
let labeledBody: string;

const rowOf = async (source: string, deliveryId: string) => {
  const [row] = await server.sql<{ id: number }[]>`
    select id from deliveries where source = ${source} and delivery_id = ${deliveryId}
    order by id desc limit 1`;
  return Number(row!.id);
};

beforeAll(async () => {
  [server, home] = await Promise.all([startTestServer(), createCliHome()]);
  admin = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: server.adminToken };
  const added = await server.api(server.adminToken, 'POST', '/agents', {
    name: 'deliveries-agent',
    queues: ['issues'],
  });
  agent = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: added.body.token };

  labeledBody = await readFixture('issues.labeled.switchboard');
  const labeled = await deliver(server.url, 'issues.labeled.switchboard', { body: labeledBody });
  const again = await deliver(server.url, 'issues.labeled.switchboard', {
    body: labeledBody,
    id: labeled.id,
  });
  const ping = await deliver(server.url, 'ping');
  const stranger = await deliver(server.url, 'issue_comment.created.untrusted');
  for (const sent of [labeled, again, ping, stranger]) expect(sent.status).toBe(200);
  ids.labeled = await server.sql<{ id: number }[]>`
    select id from deliveries where delivery_id = ${labeled.id} and disposition <> 'duplicate'`.then(
    ([row]) => Number(row!.id),
  );
  ids.duplicate = await rowOf('github', again.id);
  ids.ping = await rowOf('github', ping.id);
  ids.stranger = await rowOf('github', stranger.id);

  const crm = await addSource(server, { kind: 'standard-webhooks', name: 'crm' });
  const body = await readSourceFixture('standard-webhooks', 'contact.created');
  const headers = await standardHeaders(body, crm.secret);
  const sent = await postToSource(server, 'crm', body, headers, headers['webhook-id']);
  expect(sent.status).toBe(200);
  ids.crm = await rowOf('crm', sent.id);
});
afterAll(async () => {
  await server?.stop();
  await home?.remove();
});

describe.concurrent('deliveries list', () => {
  test('newest first, every provider, what each made', async () => {
    const result = await runCli(['deliveries', 'list'], admin);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^ID\s+SOURCE\s+EVENT\s+SUBJECT\s+ACTOR\s+DISPOSITION\s+TODO\s+RECEIVED\s+NOTE$/,
    );
    const row = (id: number) => lines.find((line) => line.startsWith(`${id} `));
    expect(row(ids.crm!)).toMatch(/^\d+\s+crm\s+contact\.created\s+.*created\s+#\d+\s+\S+Z/);
    expect(row(ids.labeled!)).toMatch(
      /^\d+\s+github\s+issues\.labeled\s+Codertocat\/Hello-World\s+Codertocat\s+created\s+#\d+\s+\S+Z$/,
    );
    expect(row(ids.duplicate!)).toMatch(/\sduplicate\s/);
    expect(row(ids.ping!)).toMatch(/^\d+\s+github\s+ping\s.*no_rule\s/);
    expect(row(ids.stranger!)).toMatch(
      /quarantined\s+#\d+\s+\S+Z\s+octo-stranger .* is not trusted$/,
    );
    // Newest first.
    const order = lines.slice(1).map((line) => Number(line.split(/\s+/)[0]));
    expect(order).toEqual([...order].sort((a, b) => b - a));
  });

  test('--source, --limit and --before page through one source; --json', async () => {
    const first = await runCli(['deliveries', 'list', '--source', 'github', '--limit', '2'], admin);
    expect(first.code).toBe(0);
    const lines = first.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    const last = Number(lines[2]!.split(/\s+/)[0]);
    expect(lines[3]).toBe(`(older deliveries: --before ${last} lists the next page)`);
    const next = parseJson(
      await runCli(
        [
          'deliveries',
          'list',
          '--source',
          'github',
          '--limit',
          '2',
          '--before',
          String(last),
          '--json',
        ],
        admin,
      ),
    );
    expect(next.deliveries.map((d: { id: number }) => d.id)).toEqual([ids.duplicate, ids.labeled]);
    expect(next.deliveries[1]).toMatchObject({
      source: 'github',
      kind: 'github',
      event: 'issues',
      action: 'labeled',
      subject: 'Codertocat/Hello-World',
      actor: 'Codertocat',
      disposition: 'created',
      todo_id: expect.any(Number),
    });
    const crm = parseJson(await runCli(['deliveries', 'list', '--source', 'crm', '--json'], admin));
    expect(crm.deliveries.map((d: { id: number }) => d.id)).toEqual([ids.crm]);
    const none = await runCli(['deliveries', 'list', '--source', 'nobody'], admin);
    expect(none).toMatchObject({ code: 0, stdout: 'no deliveries yet\n' });
  });

  test('bad flags are usage errors (exit 2); an agent is refused (exit 3)', async () => {
    const over = await runCli(['deliveries', 'list', '--limit', '501'], admin);
    expect(over).toMatchObject({ code: 2, stdout: '' });
    expect(over.stderr).toBe(
      '--limit is at most 500; for more, page: list with --limit 500, then again with --before the last ID shown\n',
    );
    const zero = await runCli(['deliveries', 'list', '--before', '0'], admin);
    expect(zero.code).toBe(2);
    const byAgent = await runCli(['deliveries', 'list'], agent);
    expect(byAgent).toMatchObject({
      code: 3,
      stdout: '',
      stderr: 'only a human may read deliveries\n',
    });
  });
});

describe.concurrent('deliveries show', () => {
  test('the record in full, with the facts the rules read and the body’s SHA-256', async () => {
    const result = await runCli(['deliveries', 'show', String(ids.labeled)], admin);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(new RegExp(`^delivery ${ids.labeled}: issues\\.labeled\\n`));
    expect(result.stdout).toMatch(/^ {2}subject: {7}Codertocat\/Hello-World$/m);
    expect(result.stdout).toMatch(/^ {2}disposition: {3}created — todo #\d+$/m);
    expect(result.stdout).toMatch(/^Facts \(what the rules read\)$/m);
    expect(result.stdout).toMatch(/^ {4}"event": "issues",$/m);

    const { delivery } = parseJson(
      await runCli(['deliveries', 'show', String(ids.labeled), '--json'], admin),
    );
    // The hash of the very bytes GitHub signed and sent.
    expect(delivery.body_sha256).toBe(createHash('sha256').update(labeledBody).digest('hex'));
    expect(delivery.facts).toMatchObject({
      event: 'issues',
      action: 'labeled',
      repository: { fullName: 'Codertocat/Hello-World' },
      sender: { login: 'Codertocat', type: 'User' },
      installation_id: 1,
      fields: { label: { name: 'switchboard' } },
    });
    // Never the payload: only the fields a rule reads.
    expect(JSON.stringify(delivery.facts)).not.toContain('avatar_url');
  });

  test('no such delivery (exit 3); an id that is not one (exit 2)', async () => {
    const missing = await runCli(['deliveries', 'show', '999999'], admin);
    expect(missing).toMatchObject({
      code: 3,
      stdout: '',
      stderr: 'no delivery 999999 (pruned after the retention period, or never recorded)\n',
    });
    const bad = await runCli(['deliveries', 'show', 'abc'], admin);
    expect(bad).toMatchObject({ code: 2, stdout: '' });
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe.sequential('deliveries explain', () => {
  test('a GitHub delivery: what today’s rules make of it, beside what it made, and which rules ran', async () => {
    const result = await runCli(['deliveries', 'explain', String(ids.labeled)], admin);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(
      new RegExp(
        `^delivery ${ids.labeled}: github issues\\.labeled in Codertocat/Hello-World by Codertocat, received \\S+Z\\n` +
          '  then:   created — todo #\\d+\\n' +
          '  now:    created on issues: issue #1 labelled switchboard in Codertocat/Hello-World: Spelling error in the README file\\n' +
          '          rule issue_labeled, kind github\\.issues\\.labeled, attributed to Codertocat\\n' +
          "  rules:  defaults — no GitHub App credentials on this server: the defaults, as for a delivery now \\(a repository's \\.github/switchboard\\.yml cannot be read\\)\\n" +
          'the rules decide as they did then \\(created\\)\\n$',
      ),
    );
    const json = parseJson(
      await runCli(['deliveries', 'explain', String(ids.labeled), '--json'], admin),
    );
    expect(json).toMatchObject({
      delivery: { id: ids.labeled, source: 'github' },
      was: { disposition: 'created', todo_id: expect.any(Number) },
      would: {
        disposition: 'created',
        rule: 'issue_labeled',
        queue: 'issues',
        kind: 'github.issues.labeled',
        attributed_to: 'Codertocat',
        // Without App credentials nothing is written back.
        write_backs: [],
        verdict: null,
      },
      rules: { from: 'defaults' },
    });
    // The todo it would make is the one it made.
    const { todo } = (await server.api(server.adminToken, 'GET', `/todos/${json.was.todo_id}`))
      .body;
    expect(todo.title).toBe(json.would.title);
  });

  test('regression: todo list left WHO blank for a GitHub todo that todo show attributes', async () => {
    const [row] = await server.sql<{ todo_id: number }[]>`
      select todo_id from deliveries where id = ${ids.labeled!}`;
    const id = Number(row!.todo_id);
    const shown = await runCli(['todo', 'show', String(id)], admin);
    expect(shown.stdout).toMatch(/^ {2}attributed to: +Codertocat$/m);
    const listed = await runCli(['todo', 'list', '--queue', 'issues', '--state', 'all'], admin);
    expect(listed.code).toBe(0);
    const [header, ...rows] = listed.stdout.trimEnd().split('\n');
    const who = header!.indexOf('WHO');
    const line = rows.find((text) => text.startsWith(`#${id} `))!;
    expect(line.slice(who).split(/\s{2,}/)[0]).toBe('Codertocat');
  });

  test('a quarantined one, a ping no rule wants, and a redelivery receipt', async () => {
    const stranger = parseJson(
      await runCli(['deliveries', 'explain', String(ids.stranger), '--json'], admin),
    );
    expect(stranger.would).toMatchObject({
      disposition: 'quarantined',
      note: 'octo-stranger (author association NONE) is not trusted',
    });
    const ping = parseJson(
      await runCli(['deliveries', 'explain', String(ids.ping), '--json'], admin),
    );
    expect(ping).toMatchObject({
      was: { disposition: 'no_rule' },
      would: { disposition: 'no_rule', queue: null },
      rules: { from: 'defaults', note: 'no rule, default or configured, can match this event' },
    });
    const duplicate = await runCli(['deliveries', 'explain', String(ids.duplicate)], admin);
    expect(duplicate.code).toBe(0);
    expect(duplicate.stdout).toMatch(/^ {2}then: {3}duplicate$/m);
    expect(duplicate.stdout).toMatch(
      /this record is a receipt for a redelivery or a replay, which makes nothing/,
    );
    expect(duplicate.stdout).toMatch(
      /^the rules decide differently now: duplicate then, created now$/m,
    );
  });

  test('a source’s delivery runs the source’s rules as saved now: after a change, it says what differs', async () => {
    const before = parseJson(
      await runCli(['deliveries', 'explain', String(ids.crm), '--json'], admin),
    );
    expect(before).toMatchObject({
      was: { disposition: 'created' },
      would: { disposition: 'created', queue: 'events', title: 'contact.created' },
      rules: { from: 'source', note: "source crm's rules, as saved now" },
    });
    // The actor is now read from the payload, and nobody is on trust.logins.
    await setRules(
      server,
      'crm',
      ['rules:', '  event:', '    types: [contact.created]', '    actor: /data/occupation'].join(
        '\n',
      ),
    );
    const after = await runCli(['deliveries', 'explain', String(ids.crm)], admin);
    expect(after.code).toBe(0);
    expect(after.stdout).toMatch(/^ {2}now: {4}quarantined on events: contact\.created$/m);
    expect(after.stdout).toMatch(/Engineer, ACME is not on this source's trust\.logins/);
    expect(after.stdout).toMatch(
      /^the rules decide differently now: created then, quarantined now$/m,
    );
    // A dry run: nothing changed.
    const { delivery } = parseJson(
      await runCli(['deliveries', 'show', String(ids.crm), '--json'], admin),
    );
    expect(delivery).toMatchObject({ disposition: 'created' });
  });

  test('an agent may not; no such delivery (exit 3)', async () => {
    const byAgent = await runCli(['deliveries', 'explain', String(ids.labeled)], agent);
    expect(byAgent).toMatchObject({ code: 3, stderr: 'only a human may read deliveries\n' });
    const missing = await runCli(['deliveries', 'explain', '999999'], admin);
    expect(missing.code).toBe(3);
  });
});

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createCliHome, parseJson, runCli, type CliHome } from '../cli/support/run-cli.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  freshLinearBody,
  giteaHeaders,
  gitlabHeaders,
  linearHeaders,
  postToSource,
  readSourceFixture,
  standardHeaders,
} from './support/sources.js';

// Each kind, as an admin and an agent would do it: `switchboard source add`, the provider's
// side set up with the URL and secret it printed, `source rules`, a delivery, `todo claim`.
let server: TestServer;
let home: CliHome;
let admin: Record<string, string>;
let agent: Record<string, string>;

beforeAll(async () => {
  [server, home] = await Promise.all([startTestServer(), createCliHome()]);
  admin = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: server.adminToken };
  const added = parseJson(
    await runCli(
      [
        'agent',
        'add',
        'worker',
        '--queue',
        'issues',
        '--queue',
        'reviews',
        '--queue',
        'events',
        '--json',
      ],
      admin,
    ),
  );
  agent = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: added.token };
});
afterAll(async () => {
  await server?.stop();
  await home?.remove();
});

async function add(args: string[]) {
  const result = await runCli(['source', 'add', ...args, '--json'], admin);
  expect(result.code, result.stderr).toBe(0);
  return parseJson(result) as {
    source: { name: string; kind: string; url: string };
    secret: string | null;
  };
}

async function rules(name: string, yaml: string) {
  const file = join(home.dir, `${name}.yml`);
  await writeFile(file, yaml);
  const result = await runCli(['source', 'rules', name, file], admin);
  expect(result.code, result.stderr).toBe(0);
  return result;
}

async function claim(queue: string) {
  const result = await runCli(['todo', 'claim', '--queue', queue, '--json'], agent);
  expect(result.code, result.stderr).toBe(0);
  return parseJson(result).todo;
}

describe.sequential('from source add to a claimed todo', () => {
  test('gitea', async () => {
    const { source, secret } = await add(['gitea', 'code']);
    expect(source).toEqual({
      name: 'code',
      kind: 'gitea',
      url: `${server.url}/api/sources/code/webhooks`,
    });
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    await rules('code', 'trust:\n  logins: [unknwon]\n');
    const body = await readSourceFixture('gitea', 'pull_request.opened');
    const sent = await postToSource(
      server,
      'code',
      body,
      giteaHeaders('gitea', 'pull_request', body, secret!),
      'x',
    );
    expect(sent.status).toBe(200);
    expect(await claim('reviews')).toMatchObject({
      state: 'claimed',
      source: 'gitea',
      title: 'PR #2 opened in gogits/hello-world: huge improvements',
      attributed_to: 'unknwon',
      claimed_by: 'worker',
    });
  });

  test('forgejo', async () => {
    const { secret } = await add(['forgejo', 'forge', '--queue', 'issues']);
    await rules('forge', 'trust:\n  logins: [unknwon]\n');
    const body = await readSourceFixture('gitea', 'issue_comment.created.command');
    const sent = await postToSource(
      server,
      'forge',
      body,
      giteaHeaders('forgejo', 'issue_comment', body, secret!),
      'x',
    );
    expect(sent.status).toBe(200);
    expect(await claim('issues')).toMatchObject({ source: 'forgejo', claimed_by: 'worker' });
  });

  test('gitlab', async () => {
    const { secret } = await add(['gitlab', 'lab', '--queue', 'reviews']);
    await rules('lab', 'trust:\n  logins: [sytses]\n');
    const body = await readSourceFixture('gitlab', 'merge_request.open');
    const sent = await postToSource(
      server,
      'lab',
      body,
      gitlabHeaders('merge_request', secret!),
      'x',
    );
    expect(sent.status).toBe(200);
    expect(await claim('reviews')).toMatchObject({
      source: 'gitlab',
      title: 'MR !1 opened in gitlab-org/hello-world: update readme',
    });
  });

  test('linear', async () => {
    const refused = await runCli(['source', 'add', 'linear', 'tracker'], admin);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/Linear makes the signing secret/);
    const { secret } = await add(['linear', 'tracker', '--secret', 'lin_wh_0123456789abcdef0123']);
    expect(secret).toBeNull();
    await rules('tracker', 'trust:\n  logins: [ada@example.com]\n');
    const body = freshLinearBody(await readSourceFixture('linear', 'Comment.create.mention'));
    const sent = await postToSource(
      server,
      'tracker',
      body,
      linearHeaders(body, 'lin_wh_0123456789abcdef0123', 'Comment'),
      'x',
    );
    expect(sent.status).toBe(200);
    expect(await claim('issues')).toMatchObject({
      source: 'linear',
      attributed_to: 'ada@example.com',
    });
  });

  test('standard-webhooks', async () => {
    const { secret } = await add(['standard-webhooks', 'crm']);
    expect(secret).toMatch(/^whsec_/);
    const body = await readSourceFixture('standard-webhooks', 'contact.created');
    const headers = await standardHeaders(body, secret!);
    expect((await postToSource(server, 'crm', body, headers, 'x')).status).toBe(200);
    expect(await claim('events')).toMatchObject({
      source: 'standard-webhooks',
      title: 'contact.created',
    });
  });

  test('source list shows every source and no secret', async () => {
    const result = await runCli(['source', 'list', '--json'], admin);
    const { sources } = parseJson(result);
    expect(sources.map((s: { name: string }) => s.name)).toEqual([
      'code',
      'crm',
      'forge',
      'lab',
      'tracker',
    ]);
    expect(result.stdout).not.toMatch(/secret"|whsec_|lin_wh_/);
    const table = await runCli(['source', 'list'], admin);
    expect(table.stdout).toMatch(/^NAME\s+KIND\s+QUEUES\s+REPLIES\s+URL\n/);
  });

  test('source rules: a bad file is refused, naming where, and nothing changes', async () => {
    const file = join(home.dir, 'bad.yml');
    await writeFile(file, 'rules:\n  pull_request_opend: { enabled: false }\n');
    const bad = await runCli(['source', 'rules', 'code', file], admin);
    expect(bad.code).toBe(3);
    expect(bad.stderr).toMatch(/the rules are not valid: rules: Unrecognized key/);
    await writeFile(file, 'rules:\n  comment: { queue: nowhere }\n');
    const queue = await runCli(['source', 'rules', 'code', file], admin);
    expect(queue.stderr).toMatch(/nowhere is not one of this source's queues/);
    const missing = await runCli(['source', 'rules', 'code', join(home.dir, 'none.yml')], admin);
    expect(missing.code).toBe(2);
  });

  test('source rules: the dry run shows what the last deliveries would now make', async () => {
    const dry = await rules('code', 'rules:\n  pull_request_opened: { enabled: false }\n');
    expect(dry.stdout).toMatch(/pull_request\.opened\s+created\s+no_rule/);
    expect(dry.stdout).toMatch(/saved the rules of code/);
  });

  test('source rotate and remove; an agent may not', async () => {
    const rotated = parseJson(await runCli(['source', 'rotate', 'code', '--json'], admin));
    expect(rotated.secret).toMatch(/^[0-9a-f]{64}$/);
    const refused = await runCli(['source', 'list'], agent);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/only an admin may list sources/);
    const removed = await runCli(['source', 'remove', 'code'], admin);
    expect(removed.stdout).toBe('removed source code\n');
    const gone = await runCli(['source', 'remove', 'code'], admin);
    expect(gone.code).toBe(3);
  });

  test('every source command has help with examples', async () => {
    for (const command of ['add', 'list', 'rotate', 'remove', 'rules']) {
      const help = await runCli(['source', command, '--help'], admin);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/EXAMPLES/);
    }
  });
});

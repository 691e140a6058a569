import { randomBytes, randomUUID } from 'node:crypto';
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { connect } from '../../src/platform/db/open-database.js';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';
import { silentLogger } from '../../src/platform/logger.js';
import { saveGitHubApp } from '../../src/integrations/github-app/github-app-store.js';
import { parseSecretKey } from '../../src/platform/secrets/load-secret-key.js';
import { createSecretBox } from '../../src/platform/secrets/secret-box.js';
import { createOwnedDatabase, type OwnedDatabase } from '../support/owned-database.js';
import { startServerProcess } from '../support/server-process.js';
import { giteaHeaders, readSourceFixture } from '../providers/support/sources.js';
import { createCliHome, parseJson, runCli, type CliHome } from './support/run-cli.js';

let home: CliHome;
let env: Record<string, string>;
let dataDir: string;
/** The managed PostgreSQL: a database of its own, owned by a role that is no superuser. */
let managed: OwnedDatabase;

beforeAll(async () => {
  home = await createCliHome();
  // As root, the embedded PostgreSQL runs as the `postgres` user, which must be able to enter
  // the data directory's parent; else the cluster would live under /var/lib/switchboard.
  await chmod(home.dir, 0o755);
  dataDir = join(home.dir, 'data');
  env = { ...home.env, SWITCHBOARD_DATA_DIR: dataDir };
  managed = await createOwnedDatabase();
});
afterAll(async () => {
  await managed?.drop();
  await home?.remove();
});

/** Saves a GitHub App as `github setup` would, in the running server's embedded PostgreSQL. */
async function setUpGitHubApp(key: Buffer, createdBy: string): Promise<void> {
  const { postgres_port } = JSON.parse(await readFile(join(dataDir, 'owner.json'), 'utf8'));
  const password = (await readFile(join(dataDir, 'pg-password'), 'utf8')).trim();
  const url = `postgres://postgres:${password}@127.0.0.1:${postgres_port}/switchboard`;
  const sql = connect(url, { schema: 'switchboard', max: 1, log: silentLogger });
  try {
    await saveGitHubApp(
      sql,
      createSecretBox(key),
      {
        id: 123456,
        slug: 'switchboard-acme',
        name: 'switchboard-acme',
        html_url: 'https://github.com/apps/switchboard-acme',
        owner: { login: 'acme' },
        client_id: 'Iv1.0123456789abcdef',
        client_secret: 'client-secret',
        webhook_secret: 'webhook-secret',
        pem: '-----BEGIN RSA PRIVATE KEY-----\nMIIE…\n-----END RSA PRIVATE KEY-----\n',
      },
      createdBy,
    );
  } finally {
    await sql.end();
  }
}

test(
  'moving from the embedded database to a managed PostgreSQL: backup while it runs, restore into DATABASE_URL, start, everything is there for the same credentials',
  { timeout: 300_000 },
  async () => {
    const port = await freePort();
    const embedded = await startServerProcess(port, env);
    const admin = parseJson(await runCli(['whoami', '--json'], env)).principal.name;
    const cli = async (args: string[], extra: Record<string, string> = {}) => {
      const result = await runCli([...args, '--json'], { ...env, ...extra });
      expect(result.code, result.stderr).toBe(0);
      return parseJson(result);
    };
    const { todo: reviewed } = await cli([
      'todo',
      'create',
      '--queue',
      'reviews',
      '--title',
      'Review PR #482',
    ]);
    const { todo: waiting } = await cli([
      'todo',
      'create',
      '--queue',
      'reviews',
      '--title',
      'Still waiting',
    ]);
    const agent = await cli(['agent', 'add', 'reviewer', '--queue', 'reviews']);
    const asAgent = { SWITCHBOARD_URL: embedded.url, SWITCHBOARD_TOKEN: agent.token };
    await cli(['todo', 'claim', String(reviewed.id)], asAgent);
    await cli(['todo', 'complete', String(reviewed.id), '--summary', 'looks good'], asAgent);
    const forge = await cli(['source', 'add', 'gitea', 'forge']);
    const keyFile = join(dataDir, 'secret.key');
    const key = (await readFile(keyFile, 'utf8')).trim();
    await setUpGitHubApp(parseSecretKey(key), admin);
    await expect.poll(embedded.stderr).toMatch(/using the GitHub App switchboard-acme/);

    const shown = await cli(['todo', 'show', String(reviewed.id)]);
    expect(shown.todo).toMatchObject({
      state: 'done',
      summary: 'looks good',
      claimed_by: 'reviewer',
    });
    expect(shown.history.map((event: { action: string }) => event.action)).toEqual(
      expect.arrayContaining(['created', 'claimed', 'completed']),
    );

    // While it runs.
    const file = join(home.dir, 'switchboard.backup.gz');
    const backup = await runCli(['backup', file], env);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toMatch(
      /^backed up schema switchboard \(migration \d{4}_\w+\) to \S+: \d+ rows in \d+ tables, [\d,]+ bytes\n$/,
    );
    expect(backup.stderr).toBe(
      `the secrets in the backup (sources', the GitHub App's, Slack's) open only with the server key, which it does not hold: the file ${keyFile} — keep it with the backup; with DATABASE_URL, set SWITCHBOARD_SECRET_KEY to its contents\n`,
    );
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(embedded.running()).toBe(true);
    expect((await embedded.stop('SIGTERM')).code).toBe(0);

    // The move: the two commands of the README, then the server on the new database.
    const moved = { ...env, DATABASE_URL: managed.url, SWITCHBOARD_SECRET_KEY: key };
    const restore = await runCli(['restore', file], moved);
    expect(restore.code, restore.stderr).toBe(0);
    expect(restore.stdout).toMatch(
      /^restored \S+ into schema switchboard \(migration \d{4}_\w+\): \d+ rows in \d+ tables — start 'switchboard up' on it\n$/,
    );
    expect(restore.stderr).toBe('');
    const again = await runCli(['restore', file], moved);
    expect(again).toMatchObject({
      code: 3,
      stderr:
        'the database already holds switchboard data (schema switchboard: table principals has rows): restore into a database without it\n',
    });

    const server = await startServerProcess(port, moved);
    expect(server.url).toBe(embedded.url);
    expect(server.stderr()).toMatch(/using the GitHub App switchboard-acme/);
    // The same credentials file, unchanged: its token is the restored server's.
    expect(await cli(['whoami'])).toMatchObject({ url: server.url, principal: { name: admin } });
    const { todos } = await cli(['todo', 'list', '--state', 'all']);
    expect(todos.map((todo: { id: number; state: string }) => [todo.id, todo.state])).toEqual([
      [waiting.id, 'pending'],
      [reviewed.id, 'done'],
    ]);
    // The todo and its history, as they were.
    expect(await cli(['todo', 'show', String(reviewed.id)])).toEqual(shown);
    expect(await cli(['whoami'], asAgent)).toMatchObject({ principal: { name: 'reviewer' } });
    // The source's sealed secret opens with the same key: a delivery signed with it is taken.
    const body = await readSourceFixture('gitea', 'issues.label_updated');
    const delivered = await fetch(`${server.url}/api/sources/forge/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...giteaHeaders('gitea', 'issues', body, forge.secret, randomUUID()),
      },
      body,
    });
    expect(delivered.status, await delivered.text()).toBeLessThan(300);
    // New todos go on from the backup's ids.
    const { todo: next } = await cli(['todo', 'create', '--queue', 'reviews', '--title', 'After']);
    expect(next.id).toBeGreaterThan(waiting.id);
    expect((await server.stop('SIGTERM')).code).toBe(0);
  },
);

test('refusals say what is wrong in one line, and change nothing', async () => {
  const notABackup = join(home.dir, 'not-a-backup.gz');
  await writeFile(notABackup, 'plain text\n');
  const fresh = join(home.dir, 'never-started');
  const refused = await runCli(['restore', notABackup], { ...env, SWITCHBOARD_DATA_DIR: fresh });
  expect(refused.code).toBe(2);
  expect(refused.stderr).toMatch(
    new RegExp(`^${notABackup} is damaged or not a switchboard backup: [^\\n]+\\n$`),
  );
  const newer = join(home.dir, 'newer.gz');
  await writeFile(
    newer,
    gzipSync(
      `${JSON.stringify({
        format: 'switchboard-backup',
        format_version: 1,
        switchboard_version: '9.0.0',
        created_at: new Date().toISOString(),
        postgres_version: '18.0',
        schema: 'switchboard',
        migrations: [{ version: 9999, name: '9999_from_the_future', checksum: 'x' }],
        secret_key_id: null,
      })}\n`,
    ),
  );
  const fromTheFuture = await runCli(['restore', newer], { ...env, SWITCHBOARD_DATA_DIR: fresh });
  expect(fromTheFuture).toMatchObject({
    code: 3,
    stderr:
      "the backup is of a newer schema than this switchboard's (its migration 9999_from_the_future is not one of ours): restore it with switchboard 9.0.0 or later\n",
  });
  const nothing = await runCli(['backup', join(home.dir, 'none.gz')], {
    ...env,
    SWITCHBOARD_DATA_DIR: fresh,
  });
  expect(nothing).toMatchObject({
    code: 2,
    stderr: `${fresh} holds no switchboard data — start 'switchboard up' on it once first\n`,
  });
  const exists = await runCli(['backup', notABackup], env);
  expect(exists).toMatchObject({
    code: 2,
    stderr: `${notABackup} exists: choose another name, or remove it first\n`,
  });
  // None of them made a data directory.
  await expect(stat(fresh)).rejects.toMatchObject({ code: 'ENOENT' });
});

test(
  'a restore into a new data directory sets it up, and says where the server key must go',
  { timeout: 120_000 },
  async () => {
    // The backup of the first test, whose secrets were sealed with its data directory's key.
    const file = join(home.dir, 'switchboard.backup.gz');
    const target = join(home.dir, 'restored-here');
    const restore = await runCli(['restore', file, '--data-dir', target, '--json'], env);
    expect(restore.code, restore.stderr).toBe(0);
    expect(parseJson(restore)).toMatchObject({
      schema: 'switchboard',
      rows: { principals: 2, todos: 2, sources: 1, github_app: 1 },
      secret_key: 'missing',
    });
    expect(restore.stderr).toBe(
      `the backup's secrets (sources', the GitHub App's, Slack's) open only with the server key they were sealed with: set SWITCHBOARD_SECRET_KEY to the key of the switchboard backed up (the contents of its data directory's secret.key), or copy that file into ${target}, before 'switchboard up'\n`,
    );
    // Its PostgreSQL stopped with the command: the data directory is free for `up`.
    await expect(stat(join(target, 'owner.json'))).rejects.toMatchObject({ code: 'ENOENT' });

    // With a key, but not the one that sealed them.
    const elsewhere = join(home.dir, 'restored-with-another-key');
    const other = await runCli(['restore', file, '--data-dir', elsewhere, '--json'], {
      ...env,
      SWITCHBOARD_SECRET_KEY: randomBytes(32).toString('base64'),
    });
    expect(other.code, other.stderr).toBe(0);
    expect(parseJson(other)).toMatchObject({ secret_key: 'other' });
    expect(other.stderr).toMatch(
      /^the backup's secrets \(sources', the GitHub App's, Slack's\) were sealed with another server key than SWITCHBOARD_SECRET_KEY: set SWITCHBOARD_SECRET_KEY to the key of the switchboard backed up/,
    );
  },
);

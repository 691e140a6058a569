import { existsSync } from 'node:fs';
import { chmod, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, expect, test } from 'vitest';
import { isAlive } from '../../src/platform/db/start-embedded-postgres.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { createCliHome, runCli, startCli, type CliHome } from './support/run-cli.js';

// Each test has a home (XDG folders, data directory) of its own; the servers are real `up`s.
const homes: CliHome[] = [];
const servers: ServerProcess[] = [];

async function newHome() {
  const home = await createCliHome();
  homes.push(home);
  // As root, the embedded PostgreSQL runs as the `postgres` user, which must enter the data directory.
  await chmod(home.dir, 0o755);
  const dataDir = join(home.dir, 'data-dir');
  return { home, dataDir, env: { ...home.env, SWITCHBOARD_DATA_DIR: dataDir, LOG_LEVEL: 'info' } };
}

async function startServer(env: Record<string, string>) {
  const server = await startServerProcess(0, env);
  servers.push(server);
  return server;
}

afterAll(async () => {
  await Promise.all(servers.filter((s) => s.running()).map((s) => s.stop('SIGTERM')));
  await Promise.all(homes.map((home) => home.remove()));
});

const postmasterPid = async (dataDir: string) =>
  Number((await readFile(join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);

/** Every file of the data directory outside the cluster, the cluster's lock file and the credentials: content and mtime. */
async function snapshot(dataDir: string, credentialsFile: string) {
  const files = [
    ...(await readdir(dataDir)).filter((name) => name !== 'pg').map((name) => join(dataDir, name)),
    join(dataDir, 'pg', 'postmaster.pid'),
    credentialsFile,
  ];
  return Object.fromEntries(
    await Promise.all(
      files.map(async (file) => {
        const info = await stat(file);
        return [
          file,
          { mtime: info.mtimeMs, content: info.isFile() ? await readFile(file, 'utf8') : 'dir' },
        ];
      }),
    ),
  );
}

/** Runs the command to its end; a second server that serves instead fails the test at once. */
async function refusedOrServing(args: string[], env: Record<string, string>) {
  const cli = startCli(args, env);
  const served = cli.waitFor(/listening on/, 90_000).then(
    () => true,
    () => false,
  );
  if (await Promise.race([served, cli.done.then(() => false)])) {
    cli.child.kill('SIGKILL');
    throw new Error(`the second ${args[0]} took the data directory over and serves it`);
  }
  return cli.done;
}

test(
  "regression: a second up on the same data directory stopped the running server's PostgreSQL",
  { timeout: 120_000 },
  async () => {
    const { home, dataDir, env } = await newHome();
    const first = await startServer(env);
    const credentialsFile = join(home.env.XDG_CONFIG_HOME!, 'switchboard', 'credentials.json');
    const postgres = await postmasterPid(dataDir);
    const before = await snapshot(dataDir, credentialsFile);

    // Another port, so that only the data directory is shared: before the fix, this one stopped
    // the first server's PostgreSQL as "left running by an earlier process" and took it over.
    for (const args of [['up', '--port', '0'], ['migrate']]) {
      const second = await refusedOrServing(args, env);
      expect(second.code, second.stderr).toBe(1);
      expect(second.stderr).toBe(
        `data directory ${dataDir} is in use by switchboard pid ${first.pid} on ${first.url}\n`,
      );
      expect(second.stdout).toBe('');
    }

    // Nothing changed: the same PostgreSQL serves the first server, which still answers.
    expect(isAlive(postgres)).toBe(true);
    expect(await snapshot(dataDir, credentialsFile)).toEqual(before);
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    expect((await runCli(['whoami'], home.env)).code).toBe(0);
    expect(first.stderr()).not.toMatch(/left running/);

    // Once it stops, the directory is free again.
    expect((await first.stop('SIGTERM')).code).toBe(0);
    expect(existsSync(join(dataDir, 'owner.json'))).toBe(false);
    const migrated = await runCli(['migrate'], env);
    expect(migrated.code, migrated.stderr).toBe(0);
  },
);

test(
  'two ups at once on a fresh data directory: one serves it, the other names it and stops',
  { timeout: 180_000 },
  async () => {
    const { dataDir, env } = await newHome();
    const both = [startCli(['up', '--port', '0'], env), startCli(['up', '--port', '0'], env)];
    // The one that finds the directory claimed stops at once; the other goes on to serve.
    const loser = await Promise.race(both.map((cli) => cli.done.then(() => cli)));
    const winner = both.find((cli) => cli !== loser)!;
    const refused = await loser.done;
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toMatch(
      new RegExp(`^data directory ${dataDir} is in use by switchboard pid ${winner.child.pid} `),
    );
    await winner.waitFor(/listening on http:/, 140_000);
    winner.child.kill('SIGTERM');
    expect((await winner.done).code).toBe(0);
  },
);

test.runIf(process.platform === 'linux')(
  "a killed owner's record holds nothing, even when its pid now names another process",
  { timeout: 120_000 },
  async () => {
    const { dataDir, env } = await newHome();
    const first = await startServer(env);
    const orphan = await postmasterPid(dataDir);
    expect((await first.stop('SIGKILL')).code).toBeNull();
    expect(isAlive(orphan)).toBe(true);

    // The pid is reused: the record now names a live process (this test's) that is not its owner.
    const file = join(dataDir, 'owner.json');
    const record = JSON.parse(await readFile(file, 'utf8'));
    expect(record).toMatchObject({ pid: first.pid, url: first.url, started: expect.any(String) });
    await writeFile(file, JSON.stringify({ ...record, pid: process.pid }));

    const next = await startServer(env);
    expect(next.stderr()).toContain('stopping an embedded PostgreSQL left running');
    for (const started = Date.now(); isAlive(orphan); await sleep(50)) {
      if (Date.now() - started > 15_000) throw new Error('the orphaned PostgreSQL still runs');
    }
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({
      pid: next.pid,
      url: next.url,
    });
    expect((await next.stop('SIGTERM')).code).toBe(0);
  },
);

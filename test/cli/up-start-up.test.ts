import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { createCliHome, runCli, startCli, type CliHome } from './support/run-cli.js';

// What `up` says, and when, as it starts: the address it really bound, a port taken before
// anything is made, the console link of every server, and where the cluster lives as root.

let home: CliHome;
let env: Record<string, string>;
let dataDir: string;

beforeAll(async () => {
  home = await createCliHome();
  // Others may enter: as root, the cluster stays in the data directory (see the last test).
  await chmod(home.dir, 0o755);
  dataDir = join(home.dir, 'data');
  env = { ...home.env, SWITCHBOARD_DATA_DIR: dataDir };
});
afterAll(() => home?.remove());

/** The JSON lines `up` logged at this level (pino: 30 info, 40 warn). */
const logged = (stderr: string, level: number) =>
  stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((line) => line.level === level)
    .map((line) => line.msg);

test('regression: up on a taken port ran initdb and the migrations before saying the port is in use', async () => {
  const taken: Server = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const { port } = taken.address() as { port: number };
  const fresh = join(home.dir, 'never-made');
  try {
    const result = await runCli(['up', '--port', String(port), '--data-dir', fresh], env);
    expect(result).toMatchObject({
      code: 1,
      stdout: '',
      stderr: `port ${port} on 127.0.0.1 is in use — pass --port or set PORT\n`,
    });
    // Nothing was made: no data directory, no cluster, no credentials.
    expect(existsSync(fresh)).toBe(false);
    expect(existsSync(join(home.env.XDG_CONFIG_HOME!, 'switchboard'))).toBe(false);
  } finally {
    await new Promise((resolve) => taken.close(resolve));
  }
});

test(
  'regression: a second server on another port never printed its one-time console link',
  { timeout: 120_000 },
  async () => {
    // The CLI already works with a first server: its entry is the current one.
    const first = 'http://127.0.0.1:3004';
    const file = join(home.env.XDG_CONFIG_HOME!, 'switchboard', 'credentials.json');
    await mkdir(join(home.env.XDG_CONFIG_HOME!, 'switchboard'), { recursive: true });
    await writeFile(
      file,
      JSON.stringify({ current: first, servers: { [first]: { token: 'sbk_first_server' } } }),
      { mode: 0o600 },
    );
    const second = startCli(['up', '--port', '0'], env);
    try {
      await second.waitFor(/listening on (http:\S+)/, 90_000);
      const url = /listening on (http:\S+)/.exec(second.stdout)![1]!;
      await second.waitFor(/web console \(this link signs you in once, within 5 minutes\): /);
      const link = /signs you in once, within 5 minutes\): (\S+)/.exec(second.stdout)![1]!;
      expect(link).toMatch(new RegExp(`^${url}/sign-in/sbl_`));
      // The link is this server's, and signs in once.
      const signIn = await fetch(link, { redirect: 'manual' });
      expect(signIn.status, await signIn.text()).toBeLessThan(400);
      // The first server is still the current one: nothing was replaced.
      expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({
        current: first,
        servers: { [first]: { token: 'sbk_first_server' }, [url]: { token: expect.any(String) } },
      });
    } finally {
      second.child.kill('SIGTERM');
    }
    // On loopback there is nothing to warn of (the next test binds every interface).
    const result = await second.done;
    expect(logged(result.stderr, 40).filter((msg) => /plain HTTP/.test(msg))).toEqual([]);
  },
);

test(
  'regression: HOST=0.0.0.0 bound every interface but printed 127.0.0.1, with no word of it',
  { timeout: 60_000 },
  async () => {
    // Runs after the test above: the data directory is initialised by then.
    const everywhere = startCli(['up', '--port', '0'], { ...env, HOST: '0.0.0.0' });
    await everywhere.waitFor(/listening on/, 60_000);
    everywhere.child.kill('SIGTERM');
    const result = await everywhere.done;
    expect(result.code, result.stderr).toBe(0);
    const line = result.stdout.split('\n')[0]!;
    const [, port] = /:(\d+) /.exec(line)!;
    expect(line).toBe(
      `switchboard is listening on http://0.0.0.0:${port} (every network interface; this machine: http://127.0.0.1:${port}) — Ctrl-C stops it`,
    );
    const warnings = logged(result.stderr, 40).filter((msg) => /plain HTTP/.test(msg));
    expect(warnings).toEqual([
      `listening on http://0.0.0.0:${port}, reachable from other machines over plain HTTP: the API, the web console and its sign-in links travel unencrypted — put a TLS proxy in front and set SWITCHBOARD_PUBLIC_URL to its https:// address, or set HOST=127.0.0.1 to keep it on this machine`,
    ]);
    // Nor does it guess its name from requests: it says what it answers and which URLs it gives.
    expect(
      logged(result.stderr, 40).filter((msg) => /^no SWITCHBOARD_PUBLIC_URL/.test(msg)),
    ).toEqual([
      `no SWITCHBOARD_PUBLIC_URL: requests are answered only when addressed to an IP address or localhost (never to a name, against DNS rebinding), and the URLs switchboard gives out (sign-in links, sources' webhook URLs) start with http://127.0.0.1:${port} — set SWITCHBOARD_PUBLIC_URL to the address its clients use`,
    ]);

    // Behind a TLS proxy (an https public URL) there is nothing to warn of.
    const proxied = startCli(['up', '--port', '0'], {
      ...env,
      HOST: '0.0.0.0',
      SWITCHBOARD_PUBLIC_URL: 'https://switchboard.example.com',
    });
    await proxied.waitFor(/listening on/, 60_000);
    proxied.child.kill('SIGTERM');
    const quiet = await proxied.done;
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(
      logged(quiet.stderr, 40).filter((msg) => /plain HTTP|SWITCHBOARD_PUBLIC_URL/.test(msg)),
    ).toEqual([]);
  },
);

const asRoot = process.getuid?.() === 0;

test.skipIf(!asRoot)(
  'regression: as root, the cluster silently lived in /var/lib/switchboard/<hash> and stayed behind when the data directory was deleted',
  { timeout: 120_000 },
  async () => {
    // mkdtemp's folders are 0700, as root's home usually is: the postgres user cannot enter.
    const closed = await createCliHome();
    const rootData = join(closed.dir, 'data');
    const rootEnv = { ...closed.env, SWITCHBOARD_DATA_DIR: rootData };
    const outside = join(
      '/var/lib/switchboard',
      createHash('sha256').update(rootData).digest('hex').slice(0, 12),
    );
    try {
      const up = startCli(['up', '--port', '0'], rootEnv);
      await up.waitFor(/listening on/, 90_000);
      up.child.kill('SIGTERM');
      const first = await up.done;
      expect(first.code, first.stderr).toBe(0);
      // The first start says where the cluster is and how to remove it; the data directory links to it.
      expect(logged(first.stderr, 40)).toContainEqual(
        `running as root: PostgreSQL runs as the postgres user, who cannot enter ${closed.dir}, so the cluster lives in ${outside}/pg (${rootData}/pg links to it). ` +
          `Deleting the data directory leaves the cluster behind: remove it too, with 'rm -rf ${outside}'. ` +
          'To keep it in the data directory, choose one the postgres user can enter (--data-dir, SWITCHBOARD_DATA_DIR)',
      );
      expect(await readlink(join(rootData, 'pg'))).toBe(`${outside}/pg`);
      expect(existsSync(join(rootData, 'pg', 'PG_VERSION'))).toBe(true);

      // Deleted with its data directory, a new one at the same path is not handed the old
      // cluster (whose password went with it): one line says what is left and how to remove it.
      await rm(rootData, { recursive: true, force: true });
      const again = await runCli(['up', '--port', '0'], rootEnv);
      expect(again).toMatchObject({
        code: 1,
        stderr: `${outside}/pg holds the PostgreSQL cluster of an earlier data directory ${rootData}, deleted since: remove it with 'rm -rf ${outside}', then start again\n`,
      });
    } finally {
      await rm(outside, { recursive: true, force: true });
      await closed.remove();
    }
  },
);

test(
  'regression: bound to every interface in a container whose port is published on 127.0.0.1, up warned of plain HTTP to other machines and gave out links on the port inside',
  { timeout: 60_000 },
  async () => {
    // Runs after the tests above: the data directory is initialised by then.
    const published = `http://127.0.0.1:${await freePort()}`;
    const inside = startCli(['up', '--port', '0'], {
      ...env,
      HOST: '0.0.0.0',
      SWITCHBOARD_PUBLISHED_URL: published,
    });
    await inside.waitFor(/web console \(this link signs you in once, within 5 minutes\): /, 60_000);
    const link = /signs you in once, within 5 minutes\): (\S+)/.exec(inside.stdout)![1]!;
    inside.child.kill('SIGTERM');
    const result = await inside.done;
    expect(result.code, result.stderr).toBe(0);
    // Its clients reach it at the published address: the links are there.
    expect(link).toMatch(new RegExp(`^${published}/sign-in/sbl_`));
    expect(
      logged(result.stderr, 40).filter((msg) => /plain HTTP|SWITCHBOARD_PUBLIC_URL/.test(msg)),
    ).toEqual([]);

    // Published beyond this machine, the warning is true, and stays.
    const everywhere = startCli(['up', '--port', '0'], {
      ...env,
      HOST: '0.0.0.0',
      SWITCHBOARD_PUBLISHED_URL: 'http://192.0.2.10:3000',
    });
    await everywhere.waitFor(/listening on/, 60_000);
    everywhere.child.kill('SIGTERM');
    const warned = await everywhere.done;
    expect(logged(warned.stderr, 40).filter((msg) => /plain HTTP/.test(msg))).toHaveLength(1);
  },
);

test(
  'regression: up beside a PostgreSQL still starting (podman-compose waits for no healthcheck) stopped at once; with SWITCHBOARD_DATABASE_WAIT_SECONDS it waits',
  { timeout: 120_000 },
  async () => {
    const name = `sb_${randomBytes(6).toString('hex')}`;
    const real = new URL(inject('databaseUrl'));
    const admin = postgres(real.href, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    // The database's port answers only once the "PostgreSQL" beside it is up: a relay to the
    // real one, opened a few seconds after up starts.
    const port = await freePort();
    const relay = createServer((socket) => {
      const upstream = connect(Number(real.port), real.hostname);
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    });
    const databaseUrl = Object.assign(new URL(real.href), {
      hostname: '127.0.0.1',
      port: String(port),
      pathname: `/${name}`,
    }).href;
    const own = await createCliHome();
    const up = startCli(['up', '--port', '0'], {
      ...own.env,
      DATABASE_URL: databaseUrl,
      SWITCHBOARD_EMBEDDED_POSTGRES: 'off',
      SWITCHBOARD_SECRET_KEY: randomBytes(32).toString('base64'),
      SWITCHBOARD_DATABASE_WAIT_SECONDS: '60',
    });
    try {
      await sleep(3000);
      expect(up.child.exitCode).toBeNull();
      await new Promise<void>((resolve) => relay.listen(port, '127.0.0.1', resolve));
      await up.waitFor(/listening on (http:\S+)/, 60_000);
      expect(logged(up.stderr, 30)).toContain(
        'waiting up to 60 s for the PostgreSQL at DATABASE_URL to answer (SWITCHBOARD_DATABASE_WAIT_SECONDS)',
      );
    } finally {
      up.child.kill('SIGTERM');
      await up.done;
      relay.close();
      await admin.unsafe(`drop database ${name} with (force)`);
      await admin.end();
      await own.remove();
    }
  },
);

test(
  'regression: with DATABASE_URL and no SWITCHBOARD_SECRET_KEY, up said so at INFO, and only a later source or Slack app was refused',
  { timeout: 120_000 },
  async () => {
    const name = `sb_${randomBytes(6).toString('hex')}`;
    const admin = postgres(inject('databaseUrl'), { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    const databaseUrl = Object.assign(new URL(inject('databaseUrl')), { pathname: `/${name}` });
    const own = await createCliHome();
    const up = startCli(['up', '--port', '0'], {
      ...own.env,
      DATABASE_URL: databaseUrl.href,
      SWITCHBOARD_EMBEDDED_POSTGRES: 'off',
    });
    try {
      await up.waitFor(/listening on (http:\S+)/, 90_000);
      expect(logged(up.stderr, 40)).toContain(
        'SWITCHBOARD_SECRET_KEY is not set, and with DATABASE_URL none is made up: sources, Slack and github setup are refused — set SWITCHBOARD_SECRET_KEY to 32 random bytes (openssl rand -base64 32) and keep it with your backups',
      );
    } finally {
      up.child.kill('SIGTERM');
      await up.done;
      await admin.unsafe(`drop database ${name}`);
      await admin.end();
      await own.remove();
    }
  },
);

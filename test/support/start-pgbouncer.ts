import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll } from 'vitest';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';

export interface PgBouncer {
  port: number;
  /** The URL of one of its databases (a name in `databases`), with the server's user and password. */
  url(database: string): string;
  /** `SHOW CLIENTS` on its console: the clients connected to each of its databases. */
  clients(): Promise<Map<string, number>>;
  /** Everything it logged so far. */
  log(): string;
  stop(): Promise<void>;
}

/** Debian's binary (in /usr/sbin, often not on PATH), or undefined when it is not installed. */
export function findPgBouncer(): string | undefined {
  return ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((path) => existsSync(path));
}

/** Started by this file's tests: they end with the file, whatever its outcome. */
const running = new Set<PgBouncer>();
afterAll(async () => {
  await Promise.all([...running].map((bouncer) => bouncer.stop()));
});

/**
 * Debian's PgBouncer (`apt-get install pgbouncer`; `.ci/run` installs it) in front of the
 * PostgreSQL at `serverUrl`, in transaction pooling mode: each of `databases` (a name clients
 * use → a database on that server) shares `poolSize` server connections among all its clients.
 * It refuses to run as root, so as root it runs as `postgres` (the user the embedded PostgreSQL
 * runs as), which must read its files: they are given to it.
 */
export async function startPgBouncer(options: {
  serverUrl: string;
  databases: Record<string, string>;
  poolSize: number;
}): Promise<PgBouncer> {
  const binary = findPgBouncer();
  if (!binary) {
    throw new Error('pgbouncer is not installed: apt-get install -y pgbouncer (.ci/run does)');
  }
  const server = new URL(options.serverUrl);
  const user = decodeURIComponent(server.username);
  const password = decodeURIComponent(server.password);
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-pgbouncer-'));
  const quote = (text: string) => `"${text.replace(/"/g, '""')}"`;
  const config = join(dir, 'pgbouncer.ini');
  const users = join(dir, 'users.txt');
  await writeFile(
    config,
    [
      '[databases]',
      ...Object.entries(options.databases).map(
        ([name, database]) =>
          `${name} = host=${server.hostname} port=${server.port || 5432} dbname=${database}`,
      ),
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      `auth_type = ${password ? 'scram-sha-256' : 'trust'}`,
      `auth_file = ${users}`,
      `admin_users = ${user}`,
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize}`,
      'max_client_conn = 500',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  // The password in plain text: PgBouncer logs in to the server with it (SCRAM), and checks it.
  await writeFile(users, `${quote(user)} ${quote(password)}\n`, { mode: 0o600 });
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    const [uid, gid] = ['-u', '-g'].map((flag) =>
      Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim()),
    );
    for (const path of [dir, config, users]) await chown(path, uid!, gid!);
    await chmod(dir, 0o700);
  }

  const child = spawn(binary, [...(asRoot ? ['-u', 'postgres'] : []), config], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ended = () => child.exitCode !== null || child.signalCode !== null;

  const url = (database: string) => {
    const address = new URL(options.serverUrl);
    address.hostname = '127.0.0.1';
    address.port = String(port);
    address.pathname = `/${database}`;
    return address.href;
  };
  let stopping: Promise<void> | undefined;
  const bouncer: PgBouncer = {
    port,
    url,
    async clients() {
      // Its console speaks only the simple protocol, and has no types to fetch.
      const console = postgres(url('pgbouncer'), {
        max: 1,
        fetch_types: false,
        onnotice: () => {},
      });
      try {
        const rows = await console.unsafe<{ database: string }[]>('show clients').simple();
        const counts = new Map<string, number>();
        for (const { database } of rows) counts.set(database, (counts.get(database) ?? 0) + 1);
        // This very connection is one of the console's clients.
        counts.set('pgbouncer', (counts.get('pgbouncer') ?? 1) - 1);
        return counts;
      } finally {
        await console.end({ timeout: 1 });
      }
    },
    log: () => log,
    stop: () =>
      (stopping ??= (async () => {
        running.delete(bouncer);
        // SIGINT would wait for every client to leave; SIGTERM ends it at once.
        if (!ended()) child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
        await rm(dir, { recursive: true, force: true });
      })()),
  };
  running.add(bouncer);

  // Listening once it says so; an early exit (a bad setting, a taken port) says why.
  for (const started = Date.now(); !/process up/.test(log);) {
    if (ended() || Date.now() - started > 20_000) {
      await bouncer.stop();
      throw new Error(`pgbouncer did not start:\n${log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return bouncer;
}

import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { isAlive } from '../../src/platform/db/claim-data-dir.js';
import { runMark } from '../support/leftover-processes.js';
import { readAdminToken } from '../support/server-process.js';
import {
  BIN,
  createCliHome,
  parseJson,
  runCli,
  startCli,
  type CliHome,
} from './support/run-cli.js';

let home: CliHome;
let env: Record<string, string>;

beforeAll(async () => {
  home = await createCliHome();
  // As root, the embedded PostgreSQL runs as the `postgres` user, which must be able to enter
  // the data directory's parent; else the cluster would live under /var/lib/switchboard.
  await chmod(home.dir, 0o755);
  env = { ...home.env, SWITCHBOARD_DATA_DIR: join(home.dir, 'data') };
});
afterAll(() => home?.remove());

// On an empty data directory and no DATABASE_URL, as a new user's first `npm start`: an
// embedded PostgreSQL is created, migrated, and the CLI's credentials are written.
test(
  'migrate, then up on a fresh data directory; SIGTERM stops it cleanly',
  { timeout: 120_000 },
  async () => {
    const migrated = await runCli(['migrate', '--json'], env);
    expect(migrated.code).toBe(0);
    const { schema, applied } = parseJson(migrated);
    expect(schema).toBe('switchboard');
    expect(applied[0]).toBe('0001_create_principals');
    const again = await runCli(['migrate'], env);
    expect(again).toMatchObject({ code: 0, stdout: 'schema switchboard is up to date\n' });

    const up = startCli(['up', '--port', '0'], env);
    await up.waitFor(/listening on (http:\S+)/, 60_000);
    const url = /listening on (http:\S+)/.exec(up.stdout)![1]!;

    const file = join(home.env.XDG_CONFIG_HOME!, 'switchboard', 'credentials.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({
      current: url,
      servers: { [url]: { token: expect.stringMatching(/^sbk_/) } },
    });
    // The CLI works on this machine with no further step.
    const whoami = parseJson(await runCli(['whoami', '--json'], env));
    expect(whoami).toMatchObject({ url, principal: { kind: 'human', is_admin: true } });

    up.child.kill('SIGTERM');
    const result = await up.done;
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/"msg":"stopped"/);
    expect((await runCli(['whoami'], env)).code).toBe(4);
  },
);

test(
  'Ctrl-C in a terminal (SIGINT to the whole process group, PostgreSQL included) stops it with 0',
  { timeout: 60_000 },
  async () => {
    // Runs after the first test: the data directory is initialised by then.
    const up = startCli(['up', '--port', '0'], env, { detached: true });
    await up.waitFor(/listening on http:/, 60_000);
    const pidFile = join(env.SWITCHBOARD_DATA_DIR!, 'pg', 'postmaster.pid');
    expect(existsSync(pidFile)).toBe(true);
    process.kill(-up.child.pid!, 'SIGINT');
    const result = await up.done;
    expect(result.code, result.stderr).toBe(0);
    // PostgreSQL stopped too (it removes its pid file last). Whether the server logged "stopped"
    // depends on who won the race to stop PostgreSQL; the exit code does not.
    for (const started = Date.now(); existsSync(pidFile); await sleep(100)) {
      if (Date.now() - started > 15_000) throw new Error('PostgreSQL is still running');
    }
  },
);

test(
  'regression: a terminal hang-up left the embedded PostgreSQL running',
  { timeout: 120_000 },
  async () => {
    // Runs after the first test: the data directory is initialised by then. A real terminal:
    // `script` runs up on a pseudo-terminal, whose session up leads.
    const child = spawn(
      'script',
      ['-qefc', `exec ${process.execPath} ${BIN} up --port 0`, '/dev/null'],
      { env: { PATH: process.env.PATH, ...runMark(), ...env } },
    );
    let screen = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (screen += chunk));
    const closed = new Promise((resolve) => child.once('close', resolve));
    const dataDir = env.SWITCHBOARD_DATA_DIR!;
    let server: number | undefined;
    let postgresPid: number | undefined;
    try {
      for (const started = Date.now(); !/listening on http:/.test(screen); await sleep(50)) {
        if (child.exitCode !== null || Date.now() - started > 60_000) {
          throw new Error(`up never listened:\n${screen}`);
        }
      }
      const up: number = JSON.parse(await readFile(join(dataDir, 'owner.json'), 'utf8')).pid;
      const cluster = Number(
        (await readFile(join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0],
      );
      [server, postgresPid] = [up, cluster];
      // The terminal goes away (its window closed, the SSH connection dropped): the kernel hangs
      // it up, and SIGHUP reaches the session's leader, up.
      child.kill('SIGKILL');
      await closed;
      for (const started = Date.now(); isAlive(cluster) || isAlive(up); await sleep(100)) {
        if (Date.now() - started > 30_000) {
          throw new Error(
            `30 s after the hang-up, still running: ${[
              isAlive(up) && `up (pid ${up})`,
              isAlive(cluster) && `PostgreSQL (pid ${cluster})`,
            ]
              .filter(Boolean)
              .join(', ')}`,
          );
        }
      }
      expect(existsSync(join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
      expect(existsSync(join(dataDir, 'owner.json'))).toBe(false);
    } finally {
      for (const pid of [server, postgresPid]) {
        if (pid !== undefined && isAlive(pid)) process.kill(pid, 'SIGKILL');
      }
    }
  },
);

test(
  'SIGTERM with a request in flight: the request finishes, then the server stops',
  { timeout: 60_000 },
  async () => {
    // Runs after the first test: the data directory is initialised by then.
    const up = startCli(['up', '--port', '0'], env);
    await up.waitFor(/listening on (http:\S+)/, 60_000);
    const url = /listening on (http:\S+)/.exec(up.stdout)![1]!;
    const dataDir = env.SWITCHBOARD_DATA_DIR!;
    const { postgres_port: port } = JSON.parse(await readFile(join(dataDir, 'owner.json'), 'utf8'));
    const password = (await readFile(join(dataDir, 'pg-password'), 'utf8')).trim();
    const db = postgres({
      host: '127.0.0.1',
      port,
      user: 'postgres',
      password,
      database: 'switchboard',
      max: 2,
      onnotice: () => {},
    });
    try {
      // Hold the request inside its transaction: it waits to insert its todo.
      const holder = await db.reserve();
      await holder`begin`;
      await holder`lock table switchboard.todos in share mode`;
      const events: string[] = [];
      const request = fetch(`${url}/api/v1/todos`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await readAdminToken(home.env.XDG_CONFIG_HOME!)}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ queue: 'drain', title: 'in flight at the stop' }),
      }).then((response) => (events.push('answered'), response.status));
      for (const started = Date.now(); ; await sleep(50)) {
        const [{ waiting }] = await db<[{ waiting: number }]>`
          select count(*)::int as waiting from pg_stat_activity
          where application_name = 'switchboard' and wait_event_type = 'Lock'`;
        if (waiting > 0) break;
        if (Date.now() - started > 20_000) throw new Error('the request never reached the lock');
      }
      let log = '';
      up.child.stderr.on('data', (chunk: string) => (log += chunk));
      void up.done.then(() => events.push('exited'));
      up.child.kill('SIGTERM');
      // It stops taking requests and waits for this one, however long it takes.
      await expect.poll(() => log).toMatch(/"msg":"stopping: finishing the requests in flight"/);
      await sleep(500);
      expect(events).toEqual([]);
      await holder`rollback`;
      holder.release();
      expect(await request).toBe(201);
      const result = await up.done;
      expect(result.code, result.stderr).toBe(0);
      expect(events).toEqual(['answered', 'exited']);
      expect(result.stderr).toMatch(/"msg":"stopped"/);
    } finally {
      await db.end({ timeout: 1 });
      if (up.child.exitCode === null) up.child.kill('SIGKILL');
    }
  },
);

test('up with a bad setting is a usage error', async () => {
  const result = await runCli(['up'], { ...env, PORT: 'eighty' });
  expect(result.code).toBe(2);
  expect(result.stderr).toMatch(/^PORT: /);
});

// The container image sets SWITCHBOARD_EMBEDDED_POSTGRES=off: without DATABASE_URL it must say
// so, not start a cluster inside the container's layer.
test('up with the embedded PostgreSQL off and no DATABASE_URL refuses in one line, starting nothing', async () => {
  const dataDir = join(home.dir, 'embedded-off');
  const result = await runCli(['up', '--port', '0'], {
    ...env,
    SWITCHBOARD_DATA_DIR: dataDir,
    SWITCHBOARD_EMBEDDED_POSTGRES: 'off',
  });
  expect(result.code).toBe(2);
  expect(result.stderr).toBe(
    'DATABASE_URL is not set, and SWITCHBOARD_EMBEDDED_POSTGRES=off starts no embedded PostgreSQL: set DATABASE_URL=postgres://user:password@host:5432/database\n',
  );
  expect(existsSync(dataDir)).toBe(false);
});

test('up with a DATABASE_URL nobody answers says which server in one line, without the password', async () => {
  const result = await runCli(['up', '--port', '0'], {
    ...env,
    DATABASE_URL: 'postgres://switchboard:supersecret@127.0.0.1:1/switchboard',
    SWITCHBOARD_EMBEDDED_POSTGRES: 'off',
  });
  expect(result.code).toBe(1);
  expect(result.stderr).toMatch(
    /^cannot use the PostgreSQL at DATABASE_URL \(127\.0\.0\.1:1\/switchboard\): connect ECONNREFUSED [^\n]*\n$/,
  );
  expect(result.stderr).not.toContain('supersecret');
});

test(
  'regression: Ctrl-C during the first initdb was reported as an unexpected error',
  { timeout: 120_000 },
  async () => {
    const fresh = await createCliHome();
    try {
      await chmod(fresh.dir, 0o755);
      const dataDir = join(fresh.dir, 'data');
      const freshEnv = { ...fresh.env, SWITCHBOARD_DATA_DIR: dataDir };
      const up = startCli(['up', '--port', '0'], freshEnv, { detached: true });
      // Wait until initdb is writing the new cluster, then press Ctrl-C.
      const writing = async () => {
        for (const dir of ['pg.init', 'pg']) {
          const files = await readdir(join(dataDir, dir)).catch(() => []);
          if (files.length > 3) return true;
        }
        return false;
      };
      for (const started = Date.now(); !(await writing()); await sleep(20)) {
        if (Date.now() - started > 60_000) throw new Error('initdb never started');
      }
      process.kill(-up.child.pid!, 'SIGINT');
      const interrupted = await up.done;
      expect(interrupted.code, interrupted.stderr).toBe(0);
      expect(interrupted.stderr).not.toMatch(/unexpected error/);
      expect(interrupted.stderr).toMatch(
        /"msg":"start-up interrupted by SIGINT: stopped before serving/,
      );
      // Nothing half-made is left for the next start to trip on: it initialises and serves.
      expect(existsSync(join(dataDir, 'pg'))).toBe(false);
      const again = startCli(['up', '--port', '0'], freshEnv);
      await again.waitFor(/listening on http:/, 90_000);
      expect((await runCli(['whoami'], freshEnv)).code).toBe(0);
      again.child.kill('SIGTERM');
      expect((await again.done).code).toBe(0);
    } finally {
      await fresh.remove();
    }
  },
);

test(
  'regression: in a terminal, up printed pino JSON; it prints readable lines, and Ctrl-C stops it',
  { timeout: 120_000 },
  async () => {
    // A real terminal: `script` runs up on a pseudo-terminal, and the ^C typed into it becomes
    // the SIGINT the terminal sends its foreground process group.
    const child = spawn(
      'script',
      ['-qefc', `exec ${process.execPath} ${BIN} up --port 0`, '/dev/null'],
      {
        // The run's mark too: a server left running by a failure here is reported after the run.
        env: { PATH: process.env.PATH, ...runMark(), ...env },
      },
    );
    let screen = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (screen += chunk));
    let exited = false;
    const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
    void closed.then(() => (exited = true));
    for (const started = Date.now(); !/listening on http:/.test(screen); await sleep(50)) {
      if (exited || Date.now() - started > 60_000) {
        throw new Error(`up never listened:\n${screen}`);
      }
    }
    child.stdin.write('\x03');
    // Bounded, with what the terminal showed and what was still running: a stop that hangs says
    // where it hung rather than end as the test's timeout.
    const hung = new AbortController();
    const code = await Promise.race([
      closed,
      sleep(60_000, undefined, { signal: hung.signal }).then(() => {
        const left = spawnSync('ps', ['-eo', 'pid,ppid,pgid,stat,etime,args'], {
          encoding: 'utf8',
        }).stdout.split('\n');
        // script's child runs in a session of its own: end it, and PostgreSQL with it.
        const server = spawnSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' }).stdout;
        for (const pid of server.split('\n').filter(Boolean))
          spawnSync('pkill', ['-KILL', '-s', pid]);
        child.kill('SIGKILL');
        throw new Error(
          `up did not stop within 60 s of Ctrl-C.\nThe terminal:\n${screen}\nStill running:\n` +
            left.filter((line) => /postgres|script|run\.js/.test(line)).join('\n'),
        );
      }),
    ]).finally(() => hung.abort());
    expect(code, screen).toBe(0);
    // eslint-disable-next-line no-control-regex
    const lines = screen.replace(/\x1b\[[0-9;]*m/g, '').split(/\r?\n/);
    expect(lines).toContainEqual(
      expect.stringMatching(/^\[\d\d:\d\d:\d\d\] INFO: switchboard is listening \{"url":"http:/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^(\^C)?\[\d\d:\d\d:\d\d\] INFO: stopping: finishing the requests in flight/,
      ),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^\[\d\d:\d\d:\d\d\] INFO: stopped$/));
    expect(screen).not.toContain('{"level":');
  },
);

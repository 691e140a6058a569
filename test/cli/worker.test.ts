import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { createCliHome, startCli, type CliHome, type RunningCli } from './support/run-cli.js';

let server: TestServer;
let home: CliHome;
let admin: Record<string, string>;
const running = new Set<RunningCli>();

beforeAll(async () => {
  [server, home] = await Promise.all([startTestServer(), createCliHome()]);
  admin = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: server.adminToken };
});
afterAll(async () => {
  for (const worker of running) worker.child.kill('SIGKILL');
  await server?.stop();
  await home?.remove();
});

/** `switchboard worker --queue QUEUE … -- node -e SCRIPT`. */
function startWorker(
  queue: string,
  script: string,
  flags: string[] = [],
  env: Record<string, string> = admin,
): RunningCli {
  const worker = startCli(
    ['worker', '--queue', queue, ...flags, '--', process.execPath, '-e', script],
    env,
  );
  running.add(worker);
  void worker.done.then(() => running.delete(worker));
  return worker;
}

const createTodo = async (queue: string, title: string) =>
  (await server.api(server.adminToken, 'POST', '/todos', { queue, title })).body.todo as {
    id: number;
  };
const getTodo = async (id: number) =>
  (await server.api(server.adminToken, 'GET', `/todos/${id}`)).body as {
    todo: Record<string, any>;
    history: { action: string; actor: string; via: string }[];
  };

async function until<T>(what: string, probe: () => Promise<T | undefined | false>): Promise<T> {
  for (const started = Date.now(); Date.now() - started < 20_000; await sleep(100)) {
    const value = await probe();
    if (value) return value;
  }
  throw new Error(`timed out waiting for ${what}`);
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A command that records its pid, then sleeps far longer than any test waits. */
const sleeper = (dir: string) => `
  require('node:fs').writeFileSync(${JSON.stringify(dir)} + '/' + process.env.SWITCHBOARD_TODO_ID, String(process.pid));
  setTimeout(() => {}, 600000);`;

describe.concurrent('worker', () => {
  test('completes with stdout as the summary; the command gets the todo on stdin and in its environment', async () => {
    const script = `
      let input = '';
      process.stdin.on('data', (chunk) => (input += chunk)).on('end', () => {
        const todo = JSON.parse(input);
        const env = process.env;
        console.log('stdin', todo.id, todo.title);
        console.log('env', env.SWITCHBOARD_TODO_ID, env.SWITCHBOARD_TODO_QUEUE, env.SWITCHBOARD_TODO_KIND, env.SWITCHBOARD_TODO_TITLE, env.SWITCHBOARD_LEASE_TOKEN === todo.lease_token);
      });`;
    const worker = startWorker('ok-q', script);
    await worker.waitFor(/^working ok-q with /m);
    // Created after the worker listens: it is woken by the event stream.
    const { id } = await createTodo('ok-q', 'Review PR #482');
    await worker.waitFor(`#${id} done (exit 0 in `);
    const { todo, history } = await getTodo(id);
    expect(todo).toMatchObject({ state: 'done' });
    expect(todo.summary).toBe(
      `stdin ${id} Review PR #482\nenv ${id} ok-q manual Review PR #482 true`,
    );
    expect(history.find((event) => event.action === 'completed')).toMatchObject({ via: 'cli' });
    expect(worker.stdout).toContain(`#${id} claimed — Review PR #482\n`);

    worker.child.kill('SIGTERM');
    const result = await worker.done;
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/stopped\n$/);
  });

  test('fails with the end of stderr when the command exits non-zero', async () => {
    const { id } = await createTodo('fail-q', 'will fail');
    const worker = startWorker(
      'fail-q',
      `console.error('boom: the tests time out'); process.exit(3);`,
    );
    await worker.waitFor(`#${id} failed (exit 3 in `);
    const { todo } = await getTodo(id);
    expect(todo).toMatchObject({
      state: 'failed',
      attempt: 1,
      summary: 'exit 3: boom: the tests time out',
    });
    worker.child.kill('SIGINT');
    expect((await worker.done).code).toBe(0);
  });

  test('a command that outlives its lease is killed and its result not reported', async () => {
    const dir = join(home.dir, 'outlived');
    await mkdir(dir, { recursive: true });
    const { id } = await createTodo('lost-q', 'takes too long');
    const worker = startWorker('lost-q', sleeper(dir), ['--lease', '2']);
    await worker.waitFor(`#${id} claimed`);
    const pid = Number(
      await until('the command to start', () =>
        readFile(join(dir, String(id)), 'utf8').catch(() => undefined),
      ),
    );

    // The worker stalls (a suspended laptop, a long pause) past its lease, and someone else
    // takes the todo over; when it comes back, its heartbeat is refused as lease_lost.
    worker.child.kill('SIGSTOP');
    try {
      await until('the lease to run out', async () => {
        const { todo } = await getTodo(id);
        return Date.parse(todo.lease_expires_at) < Date.now() - 100;
      });
      const takeover = await server.api(server.adminToken, 'POST', `/todos/${id}/claim`, {
        lease_seconds: 600,
      });
      expect(takeover.status).toBe(200);
    } finally {
      worker.child.kill('SIGCONT');
    }
    await worker.waitFor(`#${id} lease lost`);
    await until('the command to be killed', () => Promise.resolve(!isAlive(pid)));

    const { todo, history } = await getTodo(id);
    expect(todo.state).toBe('claimed');
    expect(history.map((event) => event.action)).not.toContain('completed');
    expect(history.map((event) => event.action)).not.toContain('failed');
    worker.child.kill('SIGTERM');
    expect((await worker.done).code).toBe(0);
  });

  test('SIGTERM stops the worker: the command is killed, its todo released, exit 0', async () => {
    const dir = join(home.dir, 'stopped');
    await mkdir(dir, { recursive: true });
    const { id } = await createTodo('stop-q', 'interrupted');
    const worker = startWorker('stop-q', sleeper(dir));
    await worker.waitFor(`#${id} claimed`);
    const pid = Number(
      await until('the command to start', () =>
        readFile(join(dir, String(id)), 'utf8').catch(() => undefined),
      ),
    );
    worker.child.kill('SIGTERM');
    const result = await worker.done;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`#${id} released — the worker is stopping\n`);
    expect(isAlive(pid)).toBe(false);
    const { todo, history } = await getTodo(id);
    expect(todo).toMatchObject({ state: 'pending', attempt: 0 });
    expect(history.map((event) => event.action)).toContain('released');
  });

  test('--concurrency runs that many commands at once', async () => {
    const dir = join(home.dir, 'concurrent');
    await mkdir(dir, { recursive: true });
    // Each command marks its start and waits (up to 15 s) until two have started, so that with
    // one at a time the first would only end by giving up.
    const script = `
      const fs = require('node:fs');
      fs.writeFileSync(${JSON.stringify(dir)} + '/' + process.env.SWITCHBOARD_TODO_ID, '');
      const started = Date.now();
      const check = () => {
        const count = fs.readdirSync(${JSON.stringify(dir)}).length;
        if (count >= 2 || Date.now() - started > 15000) console.log('together', count);
        else setTimeout(check, 50);
      };
      check();`;
    const ids = [];
    for (const title of ['one', 'two', 'three']) ids.push((await createTodo('many-q', title)).id);
    const worker = startWorker('many-q', script, ['--concurrency', '2']);
    for (const id of ids) await worker.waitFor(`#${id} done`);
    for (const id of ids.slice(0, 2)) {
      expect((await getTodo(id)).todo.summary).toMatch(/^together [23]$/);
    }
    worker.child.kill('SIGTERM');
    expect((await worker.done).code).toBe(0);
  });
});

test('a command that cannot be started stops the worker with its todo released (exit 1)', async () => {
  const { id } = await createTodo('enoent-q', 'no such command');
  const worker = startCli(['worker', '--queue', 'enoent-q', '--', '/nonexistent/command'], admin);
  const result = await worker.done;
  expect(result.code).toBe(1);
  expect(result.stderr).toMatch(
    /cannot run \/nonexistent\/command: spawn \/nonexistent\/command ENOENT/,
  );
  expect((await getTodo(id)).todo).toMatchObject({ state: 'pending', attempt: 0 });
});

describe.concurrent('a server that is not there yet', () => {
  test('regression: a worker started before its server exited 4 at once; it waits, says so once, then works', async () => {
    // The server comes up later on a port the worker was given while nothing listened there: a
    // second process on the same database, as a supervisor would start it.
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const worker = startWorker('early-q', `console.log('done early')`, [], {
      ...admin,
      SWITCHBOARD_URL: url,
    });
    await expect
      .poll(() => worker.stderr, { timeout: 20_000 })
      .toMatch(`waiting for switchboard at ${url} — cannot reach ${url}`);
    expect(worker.child.exitCode).toBeNull();
    const late = await startTestServer({ schema: server.schema, port });
    try {
      await worker.waitFor(/^working early-q with /m, 30_000);
      const { body } = await late.api(server.adminToken, 'POST', '/todos', {
        queue: 'early-q',
        title: 'after the wait',
      });
      await worker.waitFor(`#${body.todo.id} done (exit 0 in `);
      worker.child.kill('SIGTERM');
      const result = await worker.done;
      expect(result.code).toBe(0);
      // Said once, however many tries it took.
      expect(result.stderr.match(/waiting for switchboard/g)).toHaveLength(1);
    } finally {
      await late.stop();
    }
  });

  test('SIGTERM while it waits for the server stops it with 0', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const worker = startWorker('never-q', `console.log('never')`, [], {
      ...admin,
      SWITCHBOARD_URL: url,
    });
    await expect.poll(() => worker.stderr, { timeout: 20_000 }).toMatch('waiting for switchboard');
    worker.child.kill('SIGTERM');
    const result = await worker.done;
    expect(result).toMatchObject({ code: 0, stdout: 'stopped\n' });
  });

  test('a token the server refuses is not waited on: exit 4 at once, one line', async () => {
    const worker = startWorker('refused-q', `console.log('never')`, [], {
      ...admin,
      SWITCHBOARD_TOKEN: 'sbk_not-a-token',
    });
    const result = await worker.done;
    expect(result.code).toBe(4);
    expect(result.stderr).not.toContain('waiting');
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});

describe.concurrent('a server that restarts while a command runs', () => {
  /**
   * A worker of `queue` whose command finishes (exit 0) once its todo's file appears, on a server
   * of its own (a second process on the run's database) that the test stops and starts again on
   * the same port.
   */
  async function workerOnItsOwnServer(queue: string, flags: string[] = []) {
    const dir = join(home.dir, queue);
    await mkdir(dir, { recursive: true });
    const port = await freePort();
    let current: TestServer | undefined = await startTestServer({ schema: server.schema, port });
    const script = `
      const file = ${JSON.stringify(dir)} + '/' + process.env.SWITCHBOARD_TODO_ID;
      const wait = () => require('node:fs').existsSync(file) ? console.log('finished') : setTimeout(wait, 50);
      wait();`;
    const worker = startWorker(queue, script, flags, {
      ...admin,
      SWITCHBOARD_URL: `http://127.0.0.1:${port}`,
    });
    await worker.waitFor(new RegExp(`^working ${queue} with `, 'm'), 30_000);
    return {
      worker,
      finish: (id: number) => writeFile(join(dir, String(id)), ''),
      async stopServer() {
        await current?.stop();
        current = undefined;
      },
      async startServer() {
        current = await startTestServer({ schema: server.schema, port });
      },
    };
  }

  test('regression: a worker that finished its command while the server was restarting died; it completes the todo once the server is back, and keeps working', async ({
    expect,
  }) => {
    const { worker, finish, stopServer, startServer } = await workerOnItsOwnServer('restart-q');
    try {
      const { id } = await createTodo('restart-q', 'finished while the server restarts');
      await worker.waitFor(`#${id} claimed`);
      await stopServer();
      await finish(id);
      await expect
        .poll(() => worker.stderr, { timeout: 20_000 })
        .toContain(`#${id} is finished but cannot be reported`);
      expect(worker.child.exitCode).toBeNull();
      await startServer();
      await worker.waitFor(`#${id} done (exit 0 in `, 30_000);
      expect((await getTodo(id)).todo).toMatchObject({ state: 'done', summary: 'finished' });
      // And it goes on working.
      const next = await createTodo('restart-q', 'after the restart');
      await finish(next.id);
      await worker.waitFor(`#${next.id} done (exit 0 in `);
      worker.child.kill('SIGTERM');
      expect((await worker.done).code).toBe(0);
    } finally {
      await stopServer();
    }
  }, 120_000);

  test('regression: a result the server cannot take before its lease ends is given up with one line, and the worker keeps working', async ({
    expect,
  }) => {
    // Long enough for the server to stop and the command to finish within it, under load too.
    const { worker, finish, stopServer, startServer } = await workerOnItsOwnServer('give-up-q', [
      '--lease',
      '10',
    ]);
    try {
      const { id } = await createTodo('give-up-q', 'finished while the server is away');
      await worker.waitFor(`#${id} claimed`);
      await stopServer();
      await finish(id);
      await expect
        .poll(() => worker.stderr, { timeout: 30_000 })
        .toContain(`#${id} not reported: its lease ended`);
      expect(worker.stderr.match(new RegExp(`#${id} not reported`, 'g'))).toHaveLength(1);
      expect(worker.child.exitCode).toBeNull();
      await startServer();
      const next = await createTodo('give-up-q', 'after the outage');
      await finish(next.id);
      await worker.waitFor(`#${next.id} done (exit 0 in `, 30_000);
      worker.child.kill('SIGTERM');
      expect((await worker.done).code).toBe(0);
    } finally {
      await stopServer();
    }
  }, 120_000);
});

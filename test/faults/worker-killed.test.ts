import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  createCliHome,
  runCli,
  startCli,
  type CliHome,
  type RunningCli,
} from '../cli/support/run-cli.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

const LEASE_SECONDS = 2;

let home: CliHome;
/** Sweeper off: whatever happens to an ended lease here happens without it. */
let quiet: TestServer;
/** Sweeper every 200 ms, as the real one does every 5 s. */
let sweeping: TestServer;
const running = new Set<RunningCli>();
const orphans = new Set<number>();

beforeAll(async () => {
  [home, quiet, sweeping] = await Promise.all([
    createCliHome(),
    startTestServer({ sweepIntervalMs: 3_600_000 }),
    startTestServer({ sweepIntervalMs: 200 }),
  ]);
});
afterAll(async () => {
  for (const cli of running) cli.child.kill('SIGKILL');
  for (const pid of orphans) killGroup(pid);
  await Promise.all([quiet?.stop(), sweeping?.stop()]);
  await home?.remove();
});

function killGroup(pid: number) {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

interface Cast {
  server: TestServer;
  queue: string;
  /** The worker that is killed, and the one that takes over: two agents of the queue. */
  first: Record<string, string>;
  second: Record<string, string>;
}

async function cast(server: TestServer, queue: string): Promise<Cast> {
  const agent = async (name: string) => {
    const { status, body } = await server.api(server.adminToken, 'POST', '/agents', {
      name,
      queues: [queue],
    });
    expect(status).toBe(201);
    return { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: body.token as string };
  };
  return {
    server,
    queue,
    first: await agent(`${queue}-first`),
    second: await agent(`${queue}-second`),
  };
}

function startWorker(env: Record<string, string>, queue: string, script: string, lease?: number) {
  const worker = startCli(
    [
      'worker',
      '--queue',
      queue,
      ...(lease ? ['--lease', String(lease)] : []),
      '--',
      process.execPath,
      '-e',
      script,
    ],
    env,
  );
  running.add(worker);
  void worker.done.then(() => running.delete(worker));
  return worker;
}

/**
 * The killed worker's command: it writes down the lease token it was given (in its environment
 * and in the todo on its stdin) and its pid, then works "forever".
 */
const holdForever = (dir: string) => `
  const fs = require('node:fs');
  let input = '';
  process.stdin.on('data', (chunk) => (input += chunk)).on('end', () => {
    const file = ${JSON.stringify(dir)} + '/' + process.env.SWITCHBOARD_TODO_ID;
    fs.writeFileSync(file + '.tmp', JSON.stringify({
      pid: process.pid,
      env: process.env.SWITCHBOARD_LEASE_TOKEN,
      stdin: JSON.parse(input).lease_token,
    }));
    fs.renameSync(file + '.tmp', file + '.json');
    setInterval(() => {}, 60000);
  });`;

async function until<T>(what: string, probe: () => Promise<T | undefined | false>): Promise<T> {
  for (const started = Date.now(); Date.now() - started < 20_000; await sleep(50)) {
    const value = await probe();
    if (value) return value;
  }
  throw new Error(`timed out waiting for ${what}`);
}

const show = async (server: TestServer, id: number) =>
  (await server.api(server.adminToken, 'GET', `/todos/${id}`)).body as {
    todo: Record<string, any>;
    history: { action: string; actor: string; via: string; data: Record<string, any> | null }[];
  };

/** The todo's changes of hands, without lease renewals and the doorbell's own entries. */
const moves = (history: { action: string; actor: string; via: string }[]) =>
  history
    .filter((event) => event.action !== 'heartbeat' && event.via !== 'delivery')
    .map((event) => [event.action, event.actor]);

/** Creates a todo and has the first agent's worker claim it; returns what the worker holds. */
async function claimAndKill({ server, queue, first }: Cast, dir: string) {
  await mkdir(dir, { recursive: true });
  const { body } = await server.api(server.adminToken, 'POST', '/todos', {
    queue,
    title: 'work that outlives its worker',
  });
  const id = body.todo.id as number;
  const worker = startWorker(first, queue, holdForever(dir), LEASE_SECONDS);
  await worker.waitFor(`#${id} claimed`);
  const held = await until('the command to start', () =>
    readFile(join(dir, `${id}.json`), 'utf8').then(
      (text) => JSON.parse(text) as { pid: number; env: string; stdin: string },
      () => undefined,
    ),
  );
  orphans.add(held.pid);
  expect(held.env).toMatch(/^[0-9a-f-]{36}$/);
  expect(held.stdin).toBe(held.env);
  expect((await show(server, id)).todo).toMatchObject({
    state: 'claimed',
    claimed_by: `${queue}-first`,
  });
  return { id, token: held.env, worker };
}

/** The dead worker's token, presented by the CLI as the worker's agent: refused, exit 3. */
async function expectRefused(env: Record<string, string>, args: string[], why: RegExp) {
  const result = await runCli(args, env);
  expect(result.code, result.stderr).toBe(3);
  expect(result.stdout).toBe('');
  expect(result.stderr).toMatch(why);
}

describe.concurrent('a worker killed with SIGKILL while it holds a lease', () => {
  test('without the sweeper: claimable once the lease ends, taken over and completed once; the dead token is refused', async () => {
    const c = await cast(quiet, 'quiet-jobs');
    const { id, token, worker } = await claimAndKill(c, join(home.dir, 'quiet'));
    worker.child.kill('SIGKILL');
    expect((await worker.done).code).toBeNull();

    // Still leased: nobody else gets it before the lease ends.
    const { todo: leased } = await show(quiet, id);
    const claimEarly = await quiet.api(
      c.second.SWITCHBOARD_TOKEN!,
      'POST',
      `/queues/${c.queue}/claim`,
    );
    if (Date.now() < Date.parse(leased.lease_expires_at) - 300) {
      expect(claimEarly).toMatchObject({ status: 200, body: { todo: null } });
    }

    await until('the lease to end', async () => {
      const { todo } = await show(quiet, id);
      return Date.parse(todo.lease_expires_at) < Date.now() - 50;
    });
    // Nothing moved it back to pending: it is claimable as it stands.
    expect((await show(quiet, id)).todo.state).toBe('claimed');
    await expectRefused(
      c.first,
      ['todo', 'heartbeat', String(id), '--lease-token', token],
      new RegExp(
        `^lease on todo #${id} is lost: it ran out; the todo is claimed by quiet-jobs-first, whose lease ended at `,
      ),
    );

    const takeover = startWorker(c.second, c.queue, `console.log('done by the second worker')`);
    await takeover.waitFor(`#${id} done (exit 0 in `);
    takeover.child.kill('SIGTERM');
    expect((await takeover.done).code).toBe(0);

    const { todo, history } = await show(quiet, id);
    expect(todo).toMatchObject({
      state: 'done',
      claimed_by: 'quiet-jobs-second',
      summary: 'done by the second worker',
      attempt: 2,
    });
    expect(moves(history)).toEqual([
      ['created', expect.any(String)],
      ['claimed', 'quiet-jobs-first'],
      ['claimed', 'quiet-jobs-second'],
      ['completed', 'quiet-jobs-second'],
    ]);
    expect(
      history.find((e) => e.actor === 'quiet-jobs-second' && e.action === 'claimed')!.data,
    ).toMatchObject({
      lease_expired_for: 'quiet-jobs-first',
    });

    await expectRefused(
      c.first,
      ['todo', 'complete', String(id), '--lease-token', token, '--summary', 'late'],
      new RegExp(`^lease on todo #${id} is lost: it is done`),
    );
    const api = await quiet.api(c.first.SWITCHBOARD_TOKEN!, 'POST', `/todos/${id}/complete`, {
      lease_token: token,
    });
    expect(api).toMatchObject({ status: 409, body: { code: 'lease_lost' } });
    expect((await show(quiet, id)).history.filter((e) => e.action === 'completed')).toHaveLength(1);
  });

  test('with the sweeper: a waiting worker is woken once the lease ends, and completes it once; the dead token is refused', async () => {
    const c = await cast(sweeping, 'swept-jobs');
    const { id, token, worker } = await claimAndKill(c, join(home.dir, 'swept'));
    // The second worker waits on its event stream before the first dies: only a wake brings it.
    const takeover = startWorker(c.second, c.queue, `console.log('done by the second worker')`);
    await takeover.waitFor(/^working swept-jobs with /m);
    worker.child.kill('SIGKILL');
    expect((await worker.done).code).toBeNull();

    await takeover.waitFor(`#${id} done (exit 0 in `);
    takeover.child.kill('SIGTERM');
    expect((await takeover.done).code).toBe(0);

    const { todo, history } = await show(sweeping, id);
    expect(todo).toMatchObject({ state: 'done', claimed_by: 'swept-jobs-second', attempt: 2 });
    expect(moves(history)).toEqual([
      ['created', expect.any(String)],
      ['claimed', 'swept-jobs-first'],
      ['lease_expired', 'sweeper'],
      ['claimed', 'swept-jobs-second'],
      ['completed', 'swept-jobs-second'],
    ]);

    await expectRefused(
      c.first,
      ['todo', 'heartbeat', String(id), '--lease-token', token],
      new RegExp(`^lease on todo #${id} is lost: it is done`),
    );
  });
});

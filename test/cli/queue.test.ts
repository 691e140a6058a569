import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { createCliHome, parseJson, runCli, startCli, type CliHome } from './support/run-cli.js';

// Admission control from the CLI (issue 25): `queue set|show|list`, and what `todo claim`,
// `todo claim --wait` and `todo show` say about a queue at its limit — by running the CLI.

let server: TestServer;
let home: CliHome;
let admin: Record<string, string>;
/** The admin's name: the first start names it after the OS user. */
let adminName: string;
/** A human without admin rights. */
let bob: Record<string, string>;
/** An agent working the `held-*` queues. */
let agent: Record<string, string>;
let agentToken: string;

const HELD_QUEUES = ['held-q', 'held-wait-q', 'held-id-q'];

beforeAll(async () => {
  [server, home] = await Promise.all([startTestServer(), createCliHome()]);
  admin = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: server.adminToken };
  adminName = (await server.api(server.adminToken, 'GET', '/whoami')).body.principal.name;
  const human = await server.api(server.adminToken, 'POST', '/humans', { name: 'bob' });
  bob = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: human.body.token };
  const added = await server.api(server.adminToken, 'POST', '/agents', {
    name: 'held-agent',
    queues: HELD_QUEUES,
  });
  agentToken = added.body.token;
  agent = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: agentToken };
});
afterAll(async () => {
  await server?.stop();
  await home?.remove();
});

const ISO = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z';

const createTodo = async (queue: string, title = 'a todo') =>
  (await server.api(server.adminToken, 'POST', '/todos', { queue, title })).body.todo as {
    id: number;
  };
const claimByApi = async (queue: string, leaseSeconds = 300) =>
  (
    await server.api(agentToken, 'POST', `/queues/${queue}/claim`, {
      lease_seconds: leaseSeconds,
    })
  ).body.todo as { id: number; lease_expires_at: string };

describe.concurrent('queue set, show, list', () => {
  test('an admin sets limits; show and list say them and their use, in words and in --json', async () => {
    const set = await runCli(
      ['queue', 'set', 'set-q', '--max-in-flight', '3', '--max-claims', '100/hour'],
      admin,
    );
    expect(set).toMatchObject({
      code: 0,
      stderr: '',
      stdout:
        'set-q: at most 3 in flight, 100 claims an hour — now 0 in flight, 0 claims in the last hour, 0 waiting\n',
    });
    const json = await runCli(
      ['queue', 'set', 'set-q', '--max-claims', '500/day', '--json'],
      admin,
    );
    expect(parseJson(json)).toEqual({
      queue: {
        name: 'set-q',
        max_in_flight: 3,
        max_claims: 500,
        claims_window: 'day',
        in_flight: 0,
        claims_in_window: 0,
        waiting: 0,
        held_back: null,
        updated_by: adminName,
        updated_at: expect.stringMatching(new RegExp(`^${ISO}$`)),
      },
    });

    const shown = await runCli(['queue', 'show', 'set-q'], admin);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(
      new RegExp(
        '^queue set-q: at most 3 in flight, 500 claims a day\\n' +
          'now: 0 in flight, 0 claims in the last day, 0 waiting\\n' +
          'admitting claims \\(under its limits\\)\\n' +
          `limits set by ${adminName} at ${ISO}\\n$`,
      ),
    );
    expect(parseJson(await runCli(['queue', 'show', 'set-q', '--json'], bob)).queue).toMatchObject({
      name: 'set-q',
      max_in_flight: 3,
    });

    const listed = await runCli(['queue', 'list'], admin);
    expect(listed.stdout).toMatch(/^QUEUE +IN FLIGHT +CLAIMS +WAITING +ADMITTING$/m);
    expect(listed.stdout).toMatch(/^set-q +0\/3 +0\/500 per day +0 +yes$/m);
    const names = parseJson(await runCli(['queue', 'list', '--json'], admin)).queues.map(
      (queue: { name: string }) => queue.name,
    );
    expect(names).toContain('set-q');

    const cleared = await runCli(
      ['queue', 'set', 'set-q', '--max-in-flight', 'none', '--max-claims', 'none', '--json'],
      admin,
    );
    expect(parseJson(cleared).queue).toMatchObject({ max_in_flight: null, max_claims: null });
  });

  test('only an admin sets limits (exit 3); an agent sees only its own queues', async () => {
    const refused = await runCli(['queue', 'set', 'bob-q', '--max-in-flight', '2'], bob);
    expect(refused).toMatchObject({
      code: 3,
      stdout: '',
      stderr: "only an admin may set a queue's limits\n",
    });
    const elsewhere = await runCli(['queue', 'show', 'set-q'], agent);
    expect(elsewhere.code).toBe(3);
    expect(elsewhere.stderr).toMatch(/^agent held-agent may not use queue set-q .*\n$/);
    const own = parseJson(await runCli(['queue', 'list', '--json'], agent)).queues.map(
      (queue: { name: string }) => queue.name,
    );
    expect(own).toEqual([...HELD_QUEUES].sort());
  });

  test.each([
    [['--max-in-flight', '0'], /^--max-in-flight must be a whole number from 1 to 10000/],
    [['--max-in-flight=-2'], /^--max-in-flight must be a whole number from 1 to 10000/],
    [['--max-in-flight', 'three'], /^--max-in-flight must be a whole number/],
    [['--max-in-flight', '2.5'], /^--max-in-flight must be a whole number/],
    [['--max-in-flight', '10001'], /^--max-in-flight must be a whole number from 1 to 10000/],
    [['--max-claims', '100'], /^--max-claims must be N\/hour, N\/day or none/],
    [['--max-claims', '100/week'], /^--max-claims must be N\/hour, N\/day or none/],
    [['--max-claims', '0/hour'], /^--max-claims must be a whole number from 1 to 1000000/],
    [['--max-claims', 'lots/day'], /^--max-claims must be a whole number/],
    [[], /^give --max-in-flight or --max-claims/],
  ])('bad input %j is a usage error (exit 2) that changes nothing', async (flags, message) => {
    await runCli(['queue', 'set', 'bad-q', '--max-in-flight', '4'], admin);
    const result = await runCli(['queue', 'set', 'bad-q', ...flags], admin);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(message);
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(
      parseJson(await runCli(['queue', 'show', 'bad-q', '--json'], admin)).queue,
    ).toMatchObject({ max_in_flight: 4, max_claims: null });
  });

  test('a malformed QUEUE is a usage error (exit 2), as --queue is elsewhere, and changes nothing', async () => {
    for (const command of [
      ['queue', 'show', 'Reviews'],
      ['queue', 'set', 'Reviews', '--max-in-flight', '2'],
    ]) {
      const result = await runCli(command, admin);
      expect(result.code, command.join(' ')).toBe(2);
      expect(result.stderr).toMatch(/QUEUE must be .* — did you mean "reviews"\?/);
      expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    }
    const { queues } = parseJson(await runCli(['queue', 'list', '--json'], admin));
    expect(queues.map((q: { queue: string }) => q.queue)).not.toContain('Reviews');
  });

  test('--help of each has examples', async () => {
    for (const command of ['set', 'show', 'list']) {
      const help = await runCli(['queue', command, '--help'], admin);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain(`$ switchboard queue ${command}`);
    }
  });
});

describe('a queue at its limit', () => {
  test('todo claim says until when (exit 0); by id it is refused (exit 3); todo show says why it waits', async () => {
    await runCli(['queue', 'set', 'held-q', '--max-in-flight', '1'], admin);
    const held = await createTodo('held-q', 'one');
    const waiting = await createTodo('held-q', 'two');
    const first = await claimByApi('held-q');
    expect(first.id).toBe(held.id);
    const line = `at its limit of 1 in flight — next at ${first.lease_expires_at}`;

    expect(await runCli(['todo', 'claim', '--queue', 'held-q'], agent)).toMatchObject({
      code: 0,
      stderr: '',
      stdout: `no claimable todo on held-q: ${line}\n`,
    });
    const json = await runCli(['todo', 'claim', '--queue', 'held-q', '--json'], agent);
    expect(json.code).toBe(0);
    expect(parseJson(json)).toEqual({
      todo: null,
      held_back: {
        queue: 'held-q',
        reason: 'max_in_flight',
        next_at: first.lease_expires_at,
        message: line,
      },
    });

    const byId = await runCli(['todo', 'claim', String(waiting.id)], agent);
    expect(byId).toMatchObject({
      code: 3,
      stdout: '',
      stderr: `todo #${waiting.id} is held back: queue held-q is ${line}\n`,
    });

    const shown = await runCli(['todo', 'show', String(waiting.id)], agent);
    expect(shown.stdout).toContain(`  held back:     queue held-q is ${line}\n`);
    expect(
      parseJson(await runCli(['todo', 'show', String(waiting.id), '--json'], agent)),
    ).toMatchObject({
      todo: { id: waiting.id, state: 'pending' },
      held_back: { reason: 'max_in_flight', next_at: first.lease_expires_at },
    });
  });

  /** A queue whose one claim an hour was made an hour ago less `seconds`: it admits again then. */
  const windowFullFor = async (queue: string, seconds: number) => {
    await runCli(['queue', 'set', queue, '--max-claims', '1/hour'], admin);
    await server.sql`
      insert into queue_claims (event_id, queue, claimed_at)
      values (${-(HELD_QUEUES.indexOf(queue) + 1)}, ${queue}, now() - interval '1 hour' + make_interval(secs => ${seconds}))`;
  };
  const heldBackClaims = async (queue: string) => {
    const metrics = await (
      await fetch(`${server.url}/metrics`, {
        headers: { authorization: `Bearer ${server.adminToken}` },
      })
    ).text();
    const line = new RegExp(
      `^switchboard_claims_held_back_total\\{queue="${queue}",reason="max_claims"\\} (\\d+)$`,
      'm',
    );
    return Number(line.exec(metrics)?.[1] ?? 0);
  };

  // Nothing rings when a window frees room: a wait that only listened for wakes would sit out its
  // whole --wait. It claims again at the time the server gave, once — it neither spins nor sleeps on.
  test('todo claim --wait claims again at the time it was given, and not before', async () => {
    const next = await createTodo('held-wait-q', 'next');
    await windowFullFor('held-wait-q', 2);
    const result = await runCli(
      ['todo', 'claim', '--queue', 'held-wait-q', '--wait', '60', '--json'],
      agent,
    );
    expect(result.code).toBe(0);
    expect(parseJson(result).todo).toMatchObject({ id: next.id, state: 'claimed' });
    expect(await heldBackClaims('held-wait-q')).toBe(1);
  });

  test('worker waits for the time given too, then works the todo', async () => {
    const next = await createTodo('held-id-q', 'for the worker');
    await windowFullFor('held-id-q', 2);
    const worker = startCli(['worker', '--queue', 'held-id-q', '--', 'true'], agent);
    await worker.waitFor(`#${next.id} done`, 30_000);
    worker.child.kill('SIGTERM');
    expect((await worker.done).code).toBe(0);
    expect(await heldBackClaims('held-id-q')).toBe(1);
  });
});

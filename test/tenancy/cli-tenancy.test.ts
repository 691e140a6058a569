import { afterAll, beforeAll, expect, test } from 'vitest';
import { createCliHome, runCli, type CliHome } from '../cli/support/run-cli.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  buildTenancyWorld,
  checkVerb,
  MISSING_ID,
  type Caller,
  type TenancyWorld,
} from './support/tenancy-world.js';

let server: TestServer;
let world: TenancyWorld;
let home: CliHome;

beforeAll(async () => {
  server = await startTestServer();
  world = await buildTenancyWorld(server);
  home = await createCliHome();
});
afterAll(async () => {
  await server?.stop();
  await home?.remove();
});

const cli = (caller: Caller, args: string[]) =>
  runCli(args, {
    ...home.env,
    SWITCHBOARD_URL: server.url,
    SWITCHBOARD_TOKEN: world.tokens[caller],
  });

const HUMAN = { caller: 'alice', target: 'bob-approval' } as const;
const AGENT = { caller: 'abot', target: 'beta-claimed' } as const;

/**
 * Every command that takes a todo id: the arguments it runs with for `id`, and the pairs it is
 * run for. A representative subset of the pairs, as a process per run makes the whole matrix
 * slow, and every command is a thin client of the HTTP API, whose matrix has every pair: a human
 * and another human's approval (cancel's defect), an agent and the todo another agent holds,
 * with that agent's real lease token. Commands only humans have are run by the human, the lease
 * holder's by the agent, the others by both.
 */
const COMMANDS: Record<
  string,
  { args: (id: number, lease: string) => string[]; pairs: (typeof HUMAN | typeof AGENT)[] }
> = {
  'todo show': { args: (id) => ['todo', 'show', `${id}`], pairs: [HUMAN, AGENT] },
  'todo claim': {
    args: (id) => ['todo', 'claim', `${id}`, '--lease', '60'],
    pairs: [HUMAN, AGENT],
  },
  'todo heartbeat': {
    args: (id, lease) => ['todo', 'heartbeat', `${id}`, '--lease-token', lease],
    pairs: [AGENT],
  },
  'todo complete': {
    args: (id, lease) => ['todo', 'complete', `${id}`, '--lease-token', lease, '--summary', 'ok'],
    pairs: [AGENT],
  },
  'todo fail': {
    args: (id, lease) => ['todo', 'fail', `${id}`, '--lease-token', lease, '--reason', 'no'],
    pairs: [AGENT],
  },
  'todo release': {
    args: (id, lease) => ['todo', 'release', `${id}`, '--lease-token', lease],
    pairs: [AGENT],
  },
  'todo cancel': { args: (id) => ['todo', 'cancel', `${id}`, '--reason', 'mine'], pairs: [HUMAN] },
  'todo approve': { args: (id) => ['todo', 'approve', `${id}`, '--note', 'yes'], pairs: [HUMAN] },
  'todo deny': { args: (id) => ['todo', 'deny', `${id}`, '--note', 'no'], pairs: [HUMAN] },
  'todo reply': {
    args: (id) => ['todo', 'reply', `${id}`, '--text', 'hello'],
    pairs: [HUMAN, AGENT],
  },
  'quarantine release': { args: (id) => ['quarantine', 'release', `${id}`], pairs: [HUMAN] },
  'quarantine cancel': { args: (id) => ['quarantine', 'cancel', `${id}`], pairs: [HUMAN] },
  'approval request --about': {
    args: (id) => ['approval', 'request', 'May I?', '--about', `${id}`],
    pairs: [HUMAN, AGENT],
  },
};

test('regression: switchboard todo cancel on another human’s approval exits as for a missing id, and it stays pending', async () => {
  const bobs = (await server.api(world.tokens.bob, 'POST', '/approvals', { question: 'bob asks' }))
    .body.todo;
  const foreign = await cli('alice', ['todo', 'cancel', `${bobs.id}`]);
  const missing = await cli('alice', ['todo', 'cancel', `${MISSING_ID}`]);
  expect(missing).toEqual({ code: 3, stdout: '', stderr: `todo #${MISSING_ID} not found\n` });
  expect(foreign).toEqual({ code: 3, stdout: '', stderr: `todo #${bobs.id} not found\n` });
  expect((await server.api(world.tokens.bob, 'GET', `/todos/${bobs.id}`)).body.todo.state).toBe(
    'pending',
  );
});

test.each(Object.keys(COMMANDS))(
  'tenancy matrix (CLI): switchboard %s on a todo the caller cannot read exits as for a missing id and changes nothing',
  async (command) => {
    const wrong = await checkVerb(
      world,
      COMMANDS[command]!.pairs,
      async (caller, id, lease) =>
        JSON.stringify(await cli(caller, COMMANDS[command]!.args(id, lease))),
      // Refused (exit 3) with the ledger's one line.
      () => /^\{"code":3,"stdout":"","stderr":"todo #\d+ not found\\n"\}$/,
    );
    expect(wrong).toEqual([]);
  },
);

import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { createCliHome, runCli, type CliHome } from './support/run-cli.js';

let server: TestServer;
let home: CliHome;
let admin: Record<string, string>;

beforeAll(async () => {
  [server, home] = await Promise.all([startTestServer(), createCliHome()]);
  admin = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: server.adminToken };
});
afterAll(async () => {
  await server?.stop();
  await home?.remove();
});

/** One line on stderr, nothing on stdout, no stack. */
function expectOneLine(result: { stdout: string; stderr: string }) {
  expect(result.stdout).toBe('');
  expect(result.stderr).toMatch(/^[^\n]+\n$/);
  expect(result.stderr).not.toMatch(/\bat .+:\d+:\d+/);
}

describe.concurrent('usage errors exit 2', () => {
  test.each([
    [
      'an unknown flag',
      ['todo', 'list', '--bogus'],
      /^switchboard todo list has no flag --bogus — see 'switchboard todo list --help'$/m,
    ],
    [
      'a missing argument',
      ['todo', 'show'],
      /^missing ID \(the todo id: 42 or '#42'\) — for example: switchboard todo show 42$/m,
    ],
    ['an argument that is not a todo id', ['todo', 'show', 'abc'], /^"abc" is not a todo id/],
    ['a flag value out of range', ['todo', 'claim', '--queue', 'q', '--lease', '0'], /--lease/],
    ['a value not among the options', ['todo', 'list', '--state', 'nope'], /--state/],
    ['a missing required flag', ['todo', 'create', '--title', 't'], /queue/],
    ['neither an id nor a queue', ['todo', 'claim'], /^give a todo ID or --queue/],
    ['--wait without --queue', ['todo', 'claim', '5', '--wait', '3'], /queue/],
    [
      'a --result that is not JSON',
      ['todo', 'complete', '1', '--result', '{nope'],
      /--result must be JSON/,
    ],
    ['an unknown command', ['nope'], /^'switchboard nope' is not a command — 'switchboard --help'/],
    [
      'regression: an extra argument is answered in the colon form (todo:list:extra-arg)',
      ['todo', 'list', 'extra-arg'],
      /^switchboard todo list: unexpected argument "extra-arg" — see 'switchboard todo list --help'$/m,
    ],
    [
      'an unknown command of a topic, like none of them',
      ['todo', 'frobnicate'],
      /^'switchboard todo frobnicate' is not a command — 'switchboard todo --help' lists the todo commands$/m,
    ],
    [
      '--limit above its maximum says how to page',
      ['todo', 'list', '--limit', '501'],
      /^--limit is at most 500; for more, page: list with --limit 500, then again with --before the last ID shown$/m,
    ],
  ])('%s', async (_, args, message) => {
    // With --json too: the error stays on stderr and stdout stays empty.
    const result = await runCli([...args, '--json'], admin);
    expect(result.code).toBe(2);
    expectOneLine(result);
    expect(result.stderr).toMatch(message);
  });
});

/**
 * oclif's own parse errors were several lines in its voice (`The following error occurred:
 * Missing required flag queue`); each is now one line that says what to type.
 */
describe.concurrent("regression: parse errors in oclif's voice, not saying what to type", () => {
  test.each([
    [
      'a missing required flag',
      ['todo', 'create', '--title', 't'],
      `missing --queue (the queue, e.g. reviews) — for example: switchboard todo create --queue reviews --title "Review PR #482"`,
    ],
    [
      'a flag below its minimum',
      ['todo', 'list', '--limit', '0'],
      `--limit must be a whole number of at least 1, not "0" — see 'switchboard todo list --help'`,
    ],
    [
      'a flag that is no whole number',
      ['todo', 'claim', '--queue', 'q', '--lease', 'soon'],
      `--lease must be a whole number from 1 to 86400, not "soon" — see 'switchboard todo claim --help'`,
    ],
    [
      'a missing argument, before a flag of several values',
      ['agent', 'add', '--queue', 'reviews'],
      'missing NAME (lowercase name, unique among agents and humans) — for example: switchboard agent add reviewer --queue reviews',
    ],
    [
      'a missing argument, alone',
      ['agent', 'add'],
      'missing NAME (lowercase name, unique among agents and humans) — for example: switchboard agent add reviewer --queue reviews',
    ],
    [
      'a mistyped command',
      ['todo', 'lsit'],
      `'switchboard todo lsit' is not a command — did you mean 'switchboard todo list'?`,
    ],
    [
      'a mistyped command with its arguments',
      ['todo', 'shwo', '42'],
      `'switchboard todo shwo 42' is not a command — did you mean 'switchboard todo show 42'?`,
    ],
    [
      'a mistyped topic',
      ['tood', 'list'],
      `'switchboard tood list' is not a command — did you mean 'switchboard todo list'?`,
    ],
    [
      'a mistyped flag',
      ['todo', 'list', '--queu', 'q'],
      'switchboard todo list has no flag --queu — did you mean --queue?',
    ],
    [
      'a value not among the options',
      ['todo', 'list', '--state', 'nope'],
      '--state must be one of pending, claimed, done, failed, canceled, quarantined, open, all, not "nope"',
    ],
    [
      'a flag that needs another',
      ['todo', 'claim', '5', '--wait', '3'],
      '--wait needs --queue too — for example: switchboard todo claim --queue reviews --wait 60 --lease 900 --json',
    ],
    [
      'a flag without its value',
      ['todo', 'complete', '1', '--result'],
      `--result needs a value — for example: switchboard todo complete 42 --result '{"approved":true}'`,
    ],
  ])('%s', async (_, args, line) => {
    const result = await runCli(args, admin);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(`${line}\n`);
  });
});

describe.concurrent('regression: a malformed argument the server refused exited 3, not 2', () => {
  test.each([
    [
      ['todo', 'create', '--queue', 'Reviews', '--title', 't'],
      `--queue must be lowercase letters, digits, '.', '_' or '-' (at most 64), not "Reviews" — did you mean --queue reviews?`,
    ],
    [
      ['todo', 'create', '--queue', 'q', '--title', 't', '--kind', 'CI flake'],
      '--kind must be dotted lowercase words like github.issues.opened, not "CI flake"',
    ],
    [
      ['todo', 'create', '--queue', 'q', '--title', 't', '--assignee', 'Ada Lovelace'],
      `--assignee must be lowercase letters, digits, '.', '_' or '-' (at most 64), not "Ada Lovelace"`,
    ],
    [
      ['todo', 'list', '--queue', 'a/b'],
      `--queue must be lowercase letters, digits, '.', '_' or '-' (at most 64), not "a/b"`,
    ],
    [
      ['todo', 'claim', '--queue', 'CI'],
      `--queue must be lowercase letters, digits, '.', '_' or '-' (at most 64), not "CI" — did you mean --queue ci?`,
    ],
    [
      ['agent', 'add', 'Reviewer', '--queue', 'reviews'],
      `NAME must be lowercase letters, digits, '.', '_' or '-' (at most 64), not "Reviewer" — did you mean "reviewer"?`,
    ],
    [
      ['agent', 'add', 'reviewer', '--queue', 'Reviews'],
      `--queue must be lowercase letters, digits, '.', '_' or '-' (at most 64), not "Reviews" — did you mean --queue reviews?`,
    ],
  ])('%j', async (args, line) => {
    const before = await server.sql`select count(*)::int as n from todos`;
    const result = await runCli(args, admin);
    expect(result).toMatchObject({ code: 2, stdout: '', stderr: `${line}\n` });
    // Refused before anything was sent: nothing was made.
    expect(await server.sql`select count(*)::int as n from todos`).toEqual(before);
  });
});

test('a worker without a command exits 2', async () => {
  const result = await runCli(['worker', '--queue', 'q'], admin);
  expect(result.code).toBe(2);
  expectOneLine(result);
  expect(result.stderr).toMatch(/^no command to run — put it after --/);
});

describe.concurrent('cannot reach or authenticate: exit 4', () => {
  test('no credentials at all', async () => {
    const result = await runCli(['todo', 'list', '--json'], home.env);
    expect(result.code).toBe(4);
    expectOneLine(result);
    expect(result.stderr).toBe("no credentials — run 'switchboard login' or 'switchboard up'\n");
  });

  test('a token without the server it is for', async () => {
    const result = await runCli(['whoami'], { ...home.env, SWITCHBOARD_TOKEN: server.adminToken });
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/^SWITCHBOARD_TOKEN needs SWITCHBOARD_URL/);
  });

  test("regression: a bad SWITCHBOARD_TOKEN is answered with 'run switchboard login', which cannot help", async () => {
    const result = await runCli(['todo', 'list'], { ...admin, SWITCHBOARD_TOKEN: 'sbk_nope' });
    expect(result.code).toBe(4);
    expectOneLine(result);
    expect(result.stderr).toBe(
      'token is invalid or revoked — it comes from SWITCHBOARD_TOKEN, which overrides the credentials file: set it to a valid token, or unset it\n',
    );
  });

  test("a token from the credentials file the server does not know: 'switchboard login'", async () => {
    const own = await createCliHome();
    try {
      const dir = join(own.env.XDG_CONFIG_HOME!, 'switchboard');
      await mkdir(dir, { recursive: true });
      await writeFile(
        join(dir, 'credentials.json'),
        JSON.stringify({ current: server.url, servers: { [server.url]: { token: 'sbk_nope' } } }),
        { mode: 0o600 },
      );
      const result = await runCli(['todo', 'list'], own.env);
      expect(result.code).toBe(4);
      expectOneLine(result);
      expect(result.stderr).toMatch(/token is invalid or revoked — run 'switchboard login'/);
    } finally {
      await own.remove();
    }
  });

  test('a server that is not there', async () => {
    const port = await closedPort();
    for (const json of [[], ['--json']]) {
      const result = await runCli(['todo', 'list', ...json], {
        ...admin,
        SWITCHBOARD_URL: `http://127.0.0.1:${port}`,
      });
      expect(result.code).toBe(4);
      expectOneLine(result);
      expect(result.stderr).toMatch(/^cannot reach http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
    }
  });

  test('claim --wait on a server that is not there, once the wait is over', async () => {
    // (It waits for the server meanwhile, and the worker waits for as long as it takes:
    // test/cli/claim-wait.test.ts, test/cli/worker.test.ts.)
    const env = { ...admin, SWITCHBOARD_URL: `http://127.0.0.1:${await closedPort()}` };
    const waited = await runCli(['todo', 'claim', '--queue', 'q', '--wait', '1'], env);
    expect(waited.code).toBe(4);
    expect(waited.stderr).toMatch(/ECONNREFUSED/);
  });

  test('a credentials file that is not one', async () => {
    const broken = await createCliHome();
    try {
      const file = join(broken.env.XDG_CONFIG_HOME!, 'switchboard', 'credentials.json');
      await mkdir(join(broken.env.XDG_CONFIG_HOME!, 'switchboard'), { recursive: true });
      await writeFile(file, 'not json');
      const result = await runCli(['whoami'], broken.env);
      expect(result.code).toBe(4);
      expect(result.stderr).toMatch(
        /credentials\.json is not valid JSON — run 'switchboard login'/,
      );
    } finally {
      await broken.remove();
    }
  });
});

test('DEBUG adds the stack; without it there is none', async () => {
  const result = await runCli(['todo', 'show', '999999'], { ...admin, DEBUG: '1' });
  expect(result.code).toBe(3);
  expect(result.stderr.split('\n')[0]).toBe('todo #999999 not found');
  expect(result.stderr).toMatch(/ApiError: todo #999999 not found\n\s+at /);
});

test('--help and --version exit 0', async () => {
  const help = await runCli(['todo', 'claim', '--help'], admin);
  expect(help.code).toBe(0);
  expect(help.stdout).toContain('$ switchboard todo claim --queue reviews --wait 60');
  const version = await runCli(['--version'], admin);
  expect(version).toMatchObject({
    code: 0,
    stdout: expect.stringMatching(/^switchboard\/\d+\.\d+\.\d+ /),
  });
});

/** A port nothing listens on: bound once to learn it, then closed. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

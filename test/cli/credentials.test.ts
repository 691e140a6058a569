import { chmod, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { createCliHome, parseJson, runCli, type CliHome } from './support/run-cli.js';

// Real `up`s on data directories of their own, and the CLI reading one credentials file.
let home: CliHome;
let file: string;
const dataDir = (name: string) => join(home.dir, name);
const env = (name: string, extra: Record<string, string> = {}) => ({
  ...home.env,
  SWITCHBOARD_DATA_DIR: dataDir(name),
  ...extra,
});
const servers: ServerProcess[] = [];
/** The servers a test starts here are used by the tests after it: they end with the file. */
async function up(name: string, port = 0, extra: Record<string, string> = {}) {
  const server = await startServerProcess(port, env(name, extra), { lifetime: 'file' });
  servers.push(server);
  return server;
}
const readCredentials = async () => JSON.parse(await readFile(file, 'utf8'));

beforeAll(async () => {
  home = await createCliHome();
  // As root, the embedded PostgreSQL runs as the `postgres` user, which must enter the data directory.
  await chmod(home.dir, 0o755);
  file = join(home.env.XDG_CONFIG_HOME!, 'switchboard', 'credentials.json');
});
afterAll(async () => {
  await Promise.all(servers.filter((s) => s.running()).map((s) => s.stop('SIGTERM')));
  await home?.remove();
});

describe('one entry per server', () => {
  let a: ServerProcess;
  let b: ServerProcess;
  let tokenA: string;

  test(
    "regression: starting a server on a new data directory overwrote the first server's credentials",
    { timeout: 120_000 },
    async () => {
      a = await up('a');
      expect(await readCredentials()).toEqual({
        current: a.url,
        servers: { [a.url]: { token: expect.stringMatching(/^sbk_/) } },
      });
      tokenA = (await readCredentials()).servers[a.url].token;

      // As the `up --help` example has it: another port, another data directory.
      b = await up('b');
      const credentials = await readCredentials();
      expect(credentials).toEqual({
        current: a.url,
        servers: {
          [a.url]: { token: tokenA },
          [b.url]: { token: expect.stringMatching(/^sbk_/) },
        },
      });
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect(b.stderr()).toContain(`the CLI still uses ${a.url}`);

      // The CLI still talks to the first; either is a --url (or SWITCHBOARD_URL) away.
      const first = parseJson(await runCli(['whoami', '--json'], home.env));
      expect(first).toMatchObject({ url: a.url, principal: { is_admin: true } });
      expect(first.servers).toEqual([
        { url: a.url, current: true },
        { url: b.url, current: false },
      ]);
      for (const chosen of [
        ['whoami', '--json', '--url', b.url],
        ['whoami', '--json', '--url', `${b.url}/`],
      ]) {
        const second = parseJson(await runCli(chosen, home.env));
        expect(second).toMatchObject({ url: b.url, principal: { is_admin: true } });
      }
      const byEnv = parseJson(
        await runCli(['todo', 'list', '--json'], { ...home.env, SWITCHBOARD_URL: b.url }),
      );
      expect(byEnv).toMatchObject({ todos: [] });
    },
  );

  test('login switches between saved servers, and says when it replaces a token', async () => {
    const switched = await runCli(['login', '--url', b.url], home.env);
    expect(switched.stdout).toMatch(new RegExp(`^now using ${b.url}, as \\S+ \\(human, admin\\)`));
    expect((await readCredentials()).current).toBe(b.url);
    expect(parseJson(await runCli(['whoami', '--json'], home.env)).url).toBe(b.url);

    // A server with no token saved is signed in to through the browser: one that is not there
    // cannot be, and nothing is saved.
    const unknown = await runCli(['login', '--url', 'http://127.0.0.1:9'], home.env);
    expect(unknown.code).toBe(4);
    expect(unknown.stderr).toMatch(/^cannot reach http:\/\/127\.0\.0\.1:9 /);
    expect((await readCredentials()).servers).not.toHaveProperty(['http://127.0.0.1:9']);

    // A second token for the first server (minted from its data directory), saved by login.
    const minted = parseJson(
      await runCli(
        ['admin', 'token', '--json'],
        env('a', { XDG_CONFIG_HOME: join(home.dir, 'x') }),
      ),
    );
    expect(minted).toMatchObject({ url: a.url, running: true, saved: false });
    const login = parseJson(
      await runCli(['login', '--url', a.url, '--token', minted.token, '--json'], home.env),
    );
    expect(login).toMatchObject({ url: a.url, replaced: true });
    expect(await readCredentials()).toMatchObject({
      current: a.url,
      servers: { [a.url]: { token: minted.token } },
    });
    // The earlier token was not revoked: it still works, passed by hand.
    const earlier = await runCli(['whoami'], {
      ...home.env,
      SWITCHBOARD_URL: a.url,
      SWITCHBOARD_TOKEN: tokenA,
    });
    expect(earlier.code).toBe(0);
  });

  test('a token never goes to a server it was not saved for', async () => {
    const mismatch = await runCli(['whoami', '--url', b.url], {
      ...home.env,
      SWITCHBOARD_URL: a.url,
      SWITCHBOARD_TOKEN: tokenA,
    });
    expect(mismatch.code).toBe(4);
    expect(mismatch.stderr).toMatch(
      /^SWITCHBOARD_TOKEN is for http:\S+ \(SWITCHBOARD_URL\), not --url/,
    );
    const nowhere = await runCli(['whoami', '--url', 'http://127.0.0.1:9'], home.env);
    expect(nowhere.code).toBe(4);
    expect(nowhere.stderr).toMatch(
      /^no credentials for http:\/\/127\.0\.0\.1:9 in \S+ — run 'switchboard login/,
    );
    const bad = await runCli(['whoami', '--url', 'localhost:3000'], home.env);
    expect(bad.code).toBe(2);
  });

  test(
    'admin token mints from the data directory, running or not, and --save adds the entry',
    {
      timeout: 120_000,
    },
    async () => {
      // The CLI of another user of this machine who can read b's data directory, with no credentials.
      const other = { ...env('b'), XDG_CONFIG_HOME: join(home.dir, 'other') };
      const saved = await runCli(['admin', 'token', '--save'], other);
      expect(saved.code, saved.stderr).toBe(0);
      expect(saved.stdout).toMatch(
        new RegExp(
          `^new admin token for \\S+ on ${b.url} \\(shown once\\):\\nsbk_\\S+\\nsaved for ${b.url}`,
        ),
      );
      expect(parseJson(await runCli(['whoami', '--json'], other))).toMatchObject({ url: b.url });

      // With b stopped, it starts the data directory's PostgreSQL for a moment.
      expect((await b.stop('SIGTERM')).code).toBe(0);
      const offline = parseJson(
        await runCli(['admin', 'token', '--json', '--url', b.url], env('b')),
      );
      expect(offline).toMatchObject({
        url: b.url,
        running: false,
        token: expect.stringMatching(/^sbk_/),
      });
      await expect(stat(join(dataDir('b'), 'owner.json'))).rejects.toThrow();

      const nothing = await runCli(['admin', 'token'], env('nothing-here'));
      expect(nothing.code).toBe(2);
      expect(nothing.stderr).toMatch(
        /holds no switchboard data — start 'switchboard up' on it once first/,
      );
    },
  );
});

test('regression: after logout of the current server, whoami said there was none, not which are saved', async () => {
  const after = await createCliHome();
  try {
    const afterFile = join(after.env.XDG_CONFIG_HOME!, 'switchboard', 'credentials.json');
    await mkdir(join(after.env.XDG_CONFIG_HOME!, 'switchboard'), { recursive: true });
    // As logout of the current server leaves it: the other entries, and none current.
    const saved = {
      'http://127.0.0.1:3002': { token: 'sbk_b' },
      'http://127.0.0.1:3003': { token: 'sbk_c' },
    };
    await writeFile(afterFile, JSON.stringify({ servers: saved }), { mode: 0o600 });
    const whoami = await runCli(['whoami'], after.env);
    expect(whoami).toMatchObject({ code: 4, stdout: '' });
    expect(whoami.stderr).toBe(
      `no current server (${afterFile} keeps http://127.0.0.1:3002, http://127.0.0.1:3003) — pick one with 'switchboard login --url http://127.0.0.1:3002', or pass --url\n`,
    );
  } finally {
    await after.remove();
  }
});

test('an old single-server credentials file is read, and kept when another server is added', async () => {
  const old = await createCliHome();
  const a = servers[0]!;
  try {
    const oldFile = join(old.env.XDG_CONFIG_HOME!, 'switchboard', 'credentials.json');
    await mkdir(join(old.env.XDG_CONFIG_HOME!, 'switchboard'), { recursive: true });
    const token = (await readCredentials()).servers[a.url].token;
    await writeFile(oldFile, JSON.stringify({ url: a.url, token }), { mode: 0o600 });
    expect(parseJson(await runCli(['whoami', '--json'], old.env)).url).toBe(a.url);

    const other = 'http://127.0.0.1:9';
    const refused = await runCli(['login', '--url', other, '--token', 'sbk_x'], old.env);
    expect(refused.code).toBe(4);
    expect(JSON.parse(await readFile(oldFile, 'utf8'))).toEqual({ url: a.url, token });

    // b is stopped by now: admin token starts its PostgreSQL for a moment.
    const minted = parseJson(
      await runCli(['admin', 'token', '--json', '--save', '--url', other], {
        ...old.env,
        SWITCHBOARD_DATA_DIR: dataDir('b'),
      }),
    );
    expect(JSON.parse(await readFile(oldFile, 'utf8'))).toEqual({
      current: other,
      servers: { [a.url]: { token }, [other]: { token: minted.token } },
    });
  } finally {
    await old.remove();
  }
});

test(
  'up adds an entry when the file has none for it, and keeps one that is another server’s',
  {
    timeout: 120_000,
  },
  async () => {
    const port = await freePort();
    const fresh = await createCliHome();
    try {
      const freshEnv = (name: string) => ({ ...fresh.env, SWITCHBOARD_DATA_DIR: dataDir(name) });
      const freshFile = join(fresh.env.XDG_CONFIG_HOME!, 'switchboard', 'credentials.json');
      // c's first start saves the entry; without a file (lost, or a new user's), the next start adds it.
      const first = await startServerProcess(port, freshEnv('c'));
      servers.push(first);
      expect((await first.stop('SIGTERM')).code).toBe(0);
      await rm(freshFile);
      const again = await startServerProcess(port, freshEnv('c'));
      servers.push(again);
      expect(parseJson(await runCli(['whoami', '--json'], fresh.env)).url).toBe(again.url);
      const saved = await readFile(freshFile, 'utf8');
      expect((await again.stop('SIGTERM')).code).toBe(0);

      // Another data directory served at the same URL: c's entry stays, and the log says how to replace it.
      const d = await startServerProcess(port, freshEnv('d'));
      servers.push(d);
      expect(await readFile(freshFile, 'utf8')).toBe(saved);
      expect(d.stderr()).toContain("'switchboard admin token --save' replaces them");
      expect((await runCli(['whoami'], fresh.env)).code).toBe(4);
      const replaced = await runCli(['admin', 'token', '--save'], freshEnv('d'));
      expect(replaced.stdout).toMatch(/, replacing the token saved for it; the CLI now uses/);
      expect((await runCli(['whoami'], fresh.env)).code).toBe(0);
    } finally {
      await fresh.remove();
    }
  },
);

test(
  'two servers starting at once with one credentials file each add their entry',
  {
    timeout: 120_000,
  },
  async () => {
    const fresh = await createCliHome();
    try {
      const both = await Promise.all(
        ['e', 'f'].map(async (name) => {
          const server = await startServerProcess(0, {
            ...fresh.env,
            SWITCHBOARD_DATA_DIR: dataDir(name),
          });
          servers.push(server);
          return server;
        }),
      );
      const credentials = JSON.parse(
        await readFile(join(fresh.env.XDG_CONFIG_HOME!, 'switchboard', 'credentials.json'), 'utf8'),
      );
      expect(Object.keys(credentials.servers).sort()).toEqual(both.map((s) => s.url).sort());
      expect(both.map((s) => s.url)).toContain(credentials.current);
      await Promise.all(both.map((s) => s.stop('SIGTERM')));
    } finally {
      await fresh.remove();
    }
  },
);

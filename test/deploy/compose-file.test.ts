// compose.yaml and the Containerfile, read as Compose and the server read them. Running them is
// the container test's (test/deploy/container-image.podman.ts, `npm run test:container`).
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { expect, test } from 'vitest';
import { loadServerConfig } from '../../src/platform/config/server-config.js';
import {
  containerfileBaseImage,
  interpolate,
  interpolateLikePodmanCompose1,
  readComposeFile,
  readContainerfile,
  ROOT,
  type ComposeFile,
} from './support/deploy-files.js';

// The Compose Specification's schema (github.com/compose-spec/compose-spec, schema/compose-spec.json
// at 170098ba07d9f53c383a41bfd4c5166b0a4529a6), which Docker Compose validates files against.
const schema = JSON.parse(
  readFileSync(new URL('../fixtures/compose-spec.json', import.meta.url), 'utf8'),
) as Record<string, unknown>;
// Draft 7, Ajv's own, though named by an address Ajv does not know it by: the name is dropped.
delete schema.$schema;
// Not strict: the schema uses annotations (`deprecated`) and formats that are not validation.
const validate = new Ajv({ allErrors: true, strict: false, validateFormats: false }).compile(
  schema,
);

const REQUIRED = {
  POSTGRES_PASSWORD: randomBytes(24).toString('hex'),
  SWITCHBOARD_SECRET_KEY: randomBytes(32).toString('base64'),
  WEBHOOK_SECRET: randomBytes(32).toString('hex'),
};

test('Dockerfile is the Containerfile, byte for byte', () => {
  expect(readFileSync(new URL('Dockerfile', ROOT), 'utf8')).toBe(
    readFileSync(new URL('Containerfile', ROOT), 'utf8'),
  );
});

test('compose.yaml is valid under the Compose Specification', () => {
  const valid = validate(readComposeFile());
  expect(valid, JSON.stringify(validate.errors)).toBe(true);
});

test('the same check refuses a compose file with a misspelt key or ports not a list', () => {
  const misspelt = readComposeFile();
  const { environment, ...rest } = misspelt.services.switchboard!;
  misspelt.services.switchboard = { ...rest, enviroment: environment } as never;
  expect(validate(misspelt)).toBe(false);
  const badPort = readComposeFile();
  badPort.services.switchboard!.ports = '127.0.0.1:3000:3000' as never;
  expect(validate(badPort)).toBe(false);
});

test('compose.yaml requires the database password, the secret key and the webhook secret', () => {
  for (const name of Object.keys(REQUIRED)) {
    const vars: Record<string, string> = { ...REQUIRED, [name]: '' };
    expect(() => interpolate(readComposeFile(), vars), name).toThrow(new RegExp(`^${name}: set `));
  }
});

/**
 * The environment the server sees in compose's container: the image's, then `.env`'s (its
 * env_file), then compose's own `environment:` (empty values are unset).
 */
function serverEnvironment(compose: ComposeFile, dotEnv: Record<string, string>) {
  const switchboard = compose.services.switchboard!;
  expect(switchboard.env_file).toBe('.env');
  return { ...readContainerfile().env, ...dotEnv, ...switchboard.environment };
}

test("compose's switchboard, configured as the image starts it, uses compose's PostgreSQL, the image's volume and its port", () => {
  const compose: ComposeFile = interpolate(readComposeFile(), REQUIRED);
  const image = readContainerfile();
  const { postgres, switchboard } = compose.services;
  expect(postgres).toBeDefined();
  expect(switchboard).toBeDefined();

  const config = loadServerConfig(serverEnvironment(compose, REQUIRED));
  expect(config.host).toBe('0.0.0.0');
  expect(config.webhookSecret).toBe(REQUIRED.WEBHOOK_SECRET);
  expect(config.secretKey).toBe(REQUIRED.SWITCHBOARD_SECRET_KEY);
  expect(config.github).toBeUndefined();
  const database = new URL(config.databaseUrl!);
  expect(database.hostname).toBe('postgres');
  expect(database.port).toBe('5432');
  expect(database.username).toBe(postgres!.environment!.POSTGRES_USER);
  expect(database.password).toBe(REQUIRED.POSTGRES_PASSWORD);
  expect(database.pathname).toBe(`/${postgres!.environment!.POSTGRES_DB}`);
  // Started after PostgreSQL, it waits for it to answer: nothing waits on a healthcheck.
  expect(switchboard!.depends_on).toEqual(['postgres']);
  expect(config.databaseWaitSeconds).toBeGreaterThanOrEqual(60);
  expect(postgres!.healthcheck?.test).toEqual([
    'CMD-SHELL',
    `pg_isready -U ${database.username} -d ${database.pathname.slice(1)}`,
  ]);

  // It listens on the port compose publishes, which the image exposes, and knows where that is.
  expect(image.expose).toEqual([String(config.port)]);
  expect(switchboard!.ports).toEqual([`127.0.0.1:3000:${config.port}`]);
  expect(config.publishedUrl).toBe('http://127.0.0.1:3000');

  // Both keep their data on named volumes: the image's volume, holding the data directory, and
  // the cluster's directory of the official postgres image.
  const declared = Object.keys(compose.volumes ?? {});
  const [dataVolume, dataTarget] = switchboard!.volumes![0]!.split(':');
  expect(declared).toContain(dataVolume);
  expect(image.volumes).toEqual([dataTarget]);
  expect(config.dataDir.startsWith(`${dataTarget}/`)).toBe(true);
  expect(image.env.HOME).toBe(dataTarget);
  const [pgVolume, pgTarget] = postgres!.volumes![0]!.split(':');
  expect(declared).toContain(pgVolume);
  expect(pgTarget).toBe('/var/lib/postgresql/data');
});

test('regression: podman-compose 1.0 passed ${APP_ID:-} to the server as written, and the container crash-looped ("APP_ID: must be the numeric App ID")', () => {
  // podman-compose 1.0 substitutes as Docker Compose does for every form compose.yaml uses,
  // with a .env of the three, with one that sets more, and with one that sets every option.
  const settings = [
    REQUIRED,
    { ...REQUIRED, SWITCHBOARD_PORT: '8080', BASE_IMAGE: 'localhost/node:20' },
    { ...REQUIRED, LOG_LEVEL: 'debug', GHE_HOST: 'github.acme.internal', APP_ID: '12345' },
  ];
  for (const vars of settings) {
    const podman = interpolateLikePodmanCompose1(readComposeFile(), vars);
    expect(podman, JSON.stringify(vars)).toEqual(interpolate(readComposeFile(), vars));
    expect(JSON.stringify(podman)).not.toContain('$');
  }
  // An option left empty in .env, as a user leaves APP_ID, is unset for the server.
  const compose = interpolateLikePodmanCompose1(readComposeFile(), REQUIRED);
  expect(
    loadServerConfig(serverEnvironment(compose, { ...REQUIRED, APP_ID: '' })).github,
  ).toBeUndefined();
  // podman-compose 1.0 takes a required variable that is unset for an error too.
  expect(() =>
    interpolateLikePodmanCompose1(readComposeFile(), {
      ...REQUIRED,
      WEBHOOK_SECRET: undefined as never,
    }),
  ).toThrow(/^set WEBHOOK_SECRET/);
});

test("regression: podman-compose 1.0 ignored BASE_IMAGE in .env; it is a build argument with the Containerfile's default", () => {
  const args = (vars: Record<string, string>) =>
    interpolateLikePodmanCompose1(readComposeFile(), vars).services.switchboard!.build!.args;
  expect(args(REQUIRED)).toEqual({ BASE_IMAGE: containerfileBaseImage() });
  expect(args({ ...REQUIRED, BASE_IMAGE: 'localhost/node:20' })).toEqual({
    BASE_IMAGE: 'localhost/node:20',
  });
});

test('SWITCHBOARD_PORT publishes another port on 127.0.0.1, and the server knows it', () => {
  const compose = interpolate(readComposeFile(), { ...REQUIRED, SWITCHBOARD_PORT: '8080' });
  expect(compose.services.switchboard!.ports).toEqual(['127.0.0.1:8080:3000']);
  const config = loadServerConfig(
    serverEnvironment(compose, { ...REQUIRED, SWITCHBOARD_PORT: '8080' }),
  );
  expect(config.port).toBe(3000);
  expect(config.publishedUrl).toBe('http://127.0.0.1:8080');
  // HOST and PORT in .env cannot move it inside the container, away from what is published.
  const moved = loadServerConfig(
    serverEnvironment(compose, { ...REQUIRED, HOST: '127.0.0.1', PORT: '8080' }),
  );
  expect([moved.host, moved.port]).toEqual(['0.0.0.0', 3000]);
});

test('any variable of .env reaches the server: GHE_HOST and GHE_PROTOCOL; unset, GitHub is github.com', () => {
  const compose: ComposeFile = interpolate(readComposeFile(), REQUIRED);
  const environment = (dotEnv: Record<string, string>) =>
    loadServerConfig(serverEnvironment(compose, { ...REQUIRED, ...dotEnv }));
  expect(
    environment({ GHE_HOST: 'github.acme.internal:8443', GHE_PROTOCOL: 'http' }).githubHost,
  ).toEqual({
    web: 'http://github.acme.internal:8443',
    api: 'http://github.acme.internal:8443/api/v3',
  });
  expect(environment({}).githubHost).toEqual({
    web: 'https://github.com',
    api: 'https://api.github.com',
  });
});

// compose.yaml and the Containerfile, read as Compose and the server read them. Running them is
// the container test's (test/deploy/container-image.podman.ts, `npm run test:container`).
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { expect, test } from 'vitest';
import { loadServerConfig } from '../../src/config/server-config.js';
import {
  interpolate,
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

test("compose's switchboard, configured as the image starts it, uses compose's PostgreSQL, the image's volume and its port", () => {
  const compose: ComposeFile = interpolate(readComposeFile(), REQUIRED);
  const image = readContainerfile();
  const { postgres, switchboard } = compose.services;
  expect(postgres).toBeDefined();
  expect(switchboard).toBeDefined();

  // The environment the server sees: the image's, then compose's (empty values are unset).
  const config = loadServerConfig({ ...image.env, ...switchboard!.environment });
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
  // The server waits for a PostgreSQL that answers.
  expect(switchboard!.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
  expect(postgres!.healthcheck?.test).toEqual([
    'CMD-SHELL',
    `pg_isready -U ${database.username} -d ${database.pathname.slice(1)}`,
  ]);

  // It listens on the port compose publishes, which the image exposes.
  expect(image.expose).toEqual([String(config.port)]);
  expect(switchboard!.ports).toEqual([`127.0.0.1:3000:${config.port}`]);

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

test('compose passes GHE_HOST and GHE_PROTOCOL on to the server; unset, GitHub is github.com', () => {
  const environment = (vars: Record<string, string>) => {
    const compose: ComposeFile = interpolate(readComposeFile(), { ...REQUIRED, ...vars });
    return loadServerConfig({
      ...readContainerfile().env,
      ...compose.services.switchboard!.environment,
    });
  };
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

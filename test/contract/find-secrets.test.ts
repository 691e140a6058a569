import { expect, test } from 'vitest';
import { findSecrets } from '../../src/contract/find-secrets.js';
import {
  createWithholder,
  SECRET_ID,
  WITHHELD,
  withholdInJson,
} from '../../src/contract/withhold-secrets.js';
import { FAKE, fakeJwt, fakePrivateKey, randomText } from '../support/fake-credentials.js';

/** What findSecrets withholds of `text`, as [rule, the text it covers]. */
const finds = (text: string) =>
  findSecrets(text).map(({ rule, start, end }) => [rule, text.slice(start, end)]);

const awsSecret = FAKE.awsSecretAccessKey();
const dbPassword = FAKE.databasePassword();
const apiKey = FAKE.apiKey();
const longValue = randomText(800);

// [what, the text around it, the credential, the rule that finds it]
const CREDENTIALS: [string, string, string][] = [
  ['GitHub classic personal access token', FAKE.githubClassic(), 'github'],
  ['GitHub OAuth token', FAKE.githubOAuth(), 'github'],
  ['GitHub App server-to-server token', FAKE.githubServer(), 'github'],
  ['GitHub fine-grained personal access token', FAKE.githubFineGrained(), 'github'],
  ['GitHub App installation token (JWT format)', FAKE.githubAppInstallation(), 'github'],
  ['AWS access key id', FAKE.awsAccessKeyId(), 'aws'],
  ['Slack bot token', FAKE.slackBot(), 'slack'],
  ['Slack user token', FAKE.slackUser(), 'slack'],
  ['Slack incoming webhook URL', FAKE.slackWebhook(), 'slack'],
  ['switchboard token', FAKE.switchboard(), 'switchboard'],
  ['npm token', FAKE.npm(), 'npm'],
  ['GitLab personal access token', FAKE.gitlab(), 'gitlab'],
  ['JSON Web Token', fakeJwt(), 'jwt'],
  ['RSA private key block', fakePrivateKey('RSA '), 'privatekey'],
  ['OpenSSH private key block', fakePrivateKey('OPENSSH '), 'privatekey'],
  ['PKCS #8 private key block', fakePrivateKey(''), 'privatekey'],
  ['EC private key block', fakePrivateKey('EC '), 'privatekey'],
];

test.each(CREDENTIALS)('found, alone and inside prose: %s', (_, credential, rule) => {
  expect(finds(credential)).toEqual([[rule, credential]]);
  expect(finds(`Please rotate ${credential} today.\nThanks`)).toEqual([[rule, credential]]);
  expect(finds(`token: "${credential}"`).map(([, value]) => value)).toEqual([credential]);
});

// [what, text, the part withheld, the rule]
test.each([
  [
    'AWS secret access key (only the value)',
    `AWS_SECRET_ACCESS_KEY=${awsSecret}`,
    awsSecret,
    'aws',
  ],
  [
    'AWS secret access key in a config file',
    `aws_secret_access_key = ${awsSecret}\n`,
    awsSecret,
    'aws',
  ],
  [
    'a database URL with its password',
    `DATABASE_URL=postgres://app:${dbPassword}@db.example.com:5432/app`,
    `postgres://app:${dbPassword}@db.example.com:5432/app`,
    'database-connection-string',
  ],
  [
    'basic auth in a URL',
    `curl https://deploy:${dbPassword}@example.com/hook`,
    `https://deploy:${dbPassword}@example.com`,
    'basicauth',
  ],
  ['a high-entropy api_key=value', `api_key=${apiKey}`, apiKey, 'generic'],
  ['a quoted client secret in JSON', `{"client_secret": "${apiKey}"}`, apiKey, 'generic'],
  ['a password in YAML', `password: ${apiKey}`, apiKey, 'generic'],
  ['a long assigned value, all of it', `token=${longValue}`, longValue, 'generic'],
  [
    'an access token in a query string',
    `https://x.test/cb?access_token=${apiKey}&a=1`,
    apiKey,
    'generic',
  ],
])('found: %s', (_, text, secret, rule) => {
  expect(finds(text)).toEqual([[rule, secret]]);
});

test.each([
  [
    'the prefix in prose',
    'A classic token starts with ghp_ and a fine-grained one with github_pat_.',
  ],
  ['a prefix with too few characters', `${'gh'}p_${randomText(20)} and ${'sb'}k_${randomText(10)}`],
  ['short and full commit SHAs', 'Fixed in a1b2c3d (3f786850e387550fdab836ed7e6dc881de23001b).'],
  ['a UUID', 'request 123e4567-e89b-12d3-a456-426614174000 failed'],
  ['ordinary words with =', 'x=y, token=expired, auth=required, retry_count=3, mode=fast'],
  ['a name that says secret, with words for a value', 'secret_name=production_database_primary'],
  ['a tokenizer is not a token', 'tokenizer_model=bert-base-multilingual-cased'],
  ['base64 of low entropy', 'secret=QUFBQUFBQUFBQUFBQUFBQUFBQUE='],
  [
    'a checksum is no secret',
    'sha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
  ],
  [
    'URLs without credentials',
    'https://github.com/acme/api/pull/482#issuecomment-1 https://example.com/a?b=c&page=2 postgres://db.example.com:5432/app',
  ],
  ['an email address', 'mail jane.doe@example.com about it'],
  ['AWS’s documented example key', `${'AK'}IAIOSFODNN7EXAMPLE`],
  ['a dotted triple that is no JWT', 'header.payload.signature and eyJ alone'],
  [
    'a public key and a certificate',
    '-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----\n-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----',
  ],
  ['a reference to a withheld secret', 'see [secret:k3j9x2m4q7ab] and [secret:withheld]'],
  ['a secretlint-disable comment changes nothing', '// secretlint-disable\nplain text'],
])('stays text: %s', (_, text) => {
  expect(finds(text)).toEqual([]);
});

test('a secretlint-disable comment does not turn detection off', () => {
  const token = FAKE.githubClassic();
  expect(finds(`<!-- secretlint-disable -->\n${token}`)).toEqual([['github', token]]);
});

test('a private key block cut short is withheld to the end of the text, or from its start', () => {
  const key = fakePrivateKey();
  const head = `key:\n${key.slice(0, 200)}`;
  expect(finds(head)).toEqual([['privatekey', head.slice(5)]]);
  const tail = `${key.slice(200)}\nthat was the key`;
  expect(finds(tail)).toEqual([['privatekey', key.slice(200)]]);
  // A whole block before it is no reason to let the cut one through.
  expect(finds(`${key}\n${head}`)).toEqual([
    ['privatekey', key],
    ['privatekey', head.slice(5)],
  ]);
});

test('several credentials in one text are each found, in order', () => {
  const [a, b] = [FAKE.githubClassic(), FAKE.slackBot()];
  expect(finds(`first ${a}, then ${b}`)).toEqual([
    ['github', a],
    ['slack', b],
  ]);
});

test('a withholder replaces each credential with one reference per value', () => {
  const token = FAKE.githubClassic();
  const jwt = fakeJwt();
  const withholder = createWithholder({ keep: true });
  const title = withholder.withhold(`leaked ${token}`);
  const body = withholder.withhold(`again ${token} and ${jwt}`);
  const [first, second] = withholder.secrets;
  expect(withholder.secrets.map(({ rule, value }) => [rule, value])).toEqual([
    ['github', token],
    ['jwt', jwt],
  ]);
  expect(first!.id).toMatch(SECRET_ID);
  expect(second!.id).not.toBe(first!.id);
  expect(title).toBe(`leaked [secret:${first!.id}]`);
  expect(body).toBe(`again [secret:${first!.id}] and [secret:${second!.id}]`);
  expect(withholder.count).toBe(3);
  // Withholding what was withheld changes nothing.
  expect(createWithholder({ keep: true }).withhold(body)).toBe(body);
});

test('a withholder that cannot keep withholds all the same, and keeps nothing', () => {
  const withholder = createWithholder({ keep: false });
  expect(withholder.withhold(`x ${FAKE.switchboard()} y`)).toBe(`x ${WITHHELD} y`);
  expect(withholder.secrets).toEqual([]);
  expect(withholder.count).toBe(1);
});

test('withholdAll looks through several texts at once, each withheld on its own', () => {
  const [token, jwt] = [FAKE.githubClassic(), fakeJwt()];
  const withholder = createWithholder({ keep: true });
  const [title, empty, body] = withholder.withholdAll([`t ${token}`, '', `${jwt} and ${token}`]);
  const [first, second] = withholder.secrets;
  expect([title, empty, body]).toEqual([
    `t [secret:${first!.id}]`,
    '',
    `[secret:${second!.id}] and [secret:${first!.id}]`,
  ]);
  // A credential cut in two by the end of a text is withheld on both sides of the cut.
  const key = fakePrivateKey();
  const cut = key.indexOf('\n', 40);
  const halves = createWithholder({ keep: false }).withholdAll([key.slice(0, cut), key.slice(cut)]);
  expect(halves).toEqual([WITHHELD, WITHHELD]);
});

test('withholdInJson withholds in every string of a JSON value, and nothing else', () => {
  const token = FAKE.githubClassic();
  expect(
    withholdInJson({
      event: 'issues',
      n: 3,
      ok: true,
      none: null,
      issue: { title: `t ${token}`, labels: [token, 'bug'] },
    }),
  ).toEqual({
    event: 'issues',
    n: 3,
    ok: true,
    none: null,
    issue: { title: `t ${WITHHELD}`, labels: [WITHHELD, 'bug'] },
  });
  const clean = { event: 'issues', issue: { title: 'nothing to hide', labels: ['bug'] } };
  expect(withholdInJson(clean)).toBe(clean);
});

/**
 * Credentials in the formats their issuers use, made up at run time from a seeded generator: no
 * live secret, and none written out in the repository for a secret scanner to take for one.
 */
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const UPPER_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const BASE64 = `${ALNUM}+/`;
const BASE64URL = `${ALNUM}-_`;

/** `n` characters of `alphabet`, the same for the same seed. */
export function randomText(n: number, alphabet = ALNUM, seed = n): string {
  let state = (seed * 2654435761) >>> 0 || 1;
  let out = '';
  for (let i = 0; i < n; i++) {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    out += alphabet[state % alphabet.length];
  }
  return out;
}

const b64url = (json: object) => Buffer.from(JSON.stringify(json)).toString('base64url');

/** A JSON Web Token with a made-up HS256 signature. */
export function fakeJwt(seed = 1): string {
  return [
    b64url({ alg: 'HS256', typ: 'JWT' }),
    b64url({ sub: `user-${seed}`, iat: 1_700_000_000 + seed }),
    randomText(43, BASE64URL, seed),
  ].join('.');
}

/** A PEM private key block: ASN.1's SEQUENCE (`MII…`) and random base64 lines. */
export function fakePrivateKey(type = 'RSA ', seed = 3): string {
  const body = `MIIEow${randomText(250, BASE64, seed)}`;
  const lines = body.match(/.{1,64}/g)!.join('\n');
  return `-----BEGIN ${type}PRIVATE KEY-----\n${lines}\n-----END ${type}PRIVATE KEY-----`;
}

/** The credentials every test of withholding uses, by what they are. */
export const FAKE = {
  githubClassic: () => `${'gh'}p_${randomText(36, ALNUM, 11)}`,
  githubOAuth: () => `${'gh'}o_${randomText(36, ALNUM, 12)}`,
  githubServer: () => `${'gh'}s_${randomText(36, ALNUM, 13)}`,
  githubFineGrained: () =>
    `${'github'}_pat_${randomText(22, ALNUM, 14)}_${randomText(59, ALNUM, 15)}`,
  githubAppInstallation: () => `${'gh'}s_1234567_${fakeJwt(16)}`,
  awsAccessKeyId: () => `${'AK'}IA${randomText(16, UPPER_DIGITS, 17)}`,
  awsSecretAccessKey: () => randomText(40, BASE64, 18),
  slackBot: () =>
    `${'xo'}xb-${randomText(11, '0123456789', 19)}-${randomText(13, '0123456789', 20)}-${randomText(24, ALNUM, 21)}`,
  slackUser: () =>
    `${'xo'}xp-${randomText(11, '0123456789', 22)}-${randomText(12, '0123456789', 23)}-${randomText(32, 'abcdef0123456789', 24)}`,
  slackWebhook: () =>
    `https://hooks.${'slack'}.com/services/T${randomText(10, UPPER_DIGITS, 25)}/B${randomText(10, UPPER_DIGITS, 26)}/${randomText(24, ALNUM, 27)}`,
  switchboard: () => `${'sb'}k_${randomText(43, BASE64URL, 28)}`,
  npm: () => `${'np'}m_${randomText(36, ALNUM, 29)}`,
  gitlab: () => `${'gl'}pat-${randomText(20, ALNUM, 30)}`,
  apiKey: () => randomText(32, ALNUM, 31),
  databasePassword: () => randomText(18, ALNUM, 32),
};

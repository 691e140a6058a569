import { execFile } from 'node:child_process';
import {
  createDecipheriv,
  createECDH,
  createPublicKey,
  hkdfSync,
  randomBytes,
  verify,
  type ECDH,
} from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { Agent, createServer, type Server } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveNames } from '../../support/resolve-names.js';

/**
 * The fake service's host name: `.test` is reserved for tests. While the service runs, this
 * process's resolver answers it with 127.0.0.1 (test/support/resolve-names.ts), so a server must
 * allow 127.0.0.1 (SWITCHBOARD_OUTBOUND_ALLOW) and trust {@link FakePushService.certificate} to
 * reach it; its own `agent` resolves the name by itself.
 */
export const PUSH_HOST = 'push.example.test';

/** A subscription as a browser's `PushSubscription.toJSON()` gives it. */
export interface SubscriptionJson {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

/** One push the service accepted (or refused on purpose), checked and decrypted. */
export interface ReceivedPush {
  token: string;
  status: number;
  ttl: number;
  urgency: string | undefined;
  topic: string | undefined;
  /** The VAPID token's claims, its signature verified with the key it names. */
  jwt: { aud: string; exp: number; sub: string };
  /** The decrypted payload, parsed. */
  message: any;
  at: number;
}

export interface FakePushService {
  /** https://push.example.test:PORT */
  origin: string;
  /** The agent the server must use to reach it: trusts its certificate, resolves its name. */
  agent: Agent;
  /** Its self-signed certificate, for a client that is to trust it. */
  certificate: Buffer;
  /** TCP connections it has accepted, whatever came over them. */
  connections(): number;
  /** A new subscription, as a browser would make for the server's VAPID public key. */
  subscribe(): SubscriptionJson;
  /** Pushes accepted, in order of arrival (refusals included, with their status). */
  received: ReceivedPush[];
  /** Requests that failed a check (bad JWT, undecryptable body): each a reason. */
  rejected: string[];
  /** The statuses to answer the next pushes to a subscription with (then 201). */
  failNext(token: string, statuses: number[], headers?: Record<string, string>): void;
  /** The subscription is gone (the browser unsubscribed): 410 (or 404) from now on. */
  forget(token: string, status?: 404 | 410): void;
  /** Called with each accepted push's plaintext, e.g. to hand it to a real service worker. */
  onPush?: (push: ReceivedPush, plaintext: string) => void | Promise<void>;
  close(): Promise<void>;
}

const run = promisify(execFile);

/**
 * A push service on 127.0.0.1, as RFC 8030 describes one: TLS (a certificate made here with
 * openssl, for {@link PUSH_HOST}), and for each push a check of the VAPID token (RFC 8292:
 * ES256 signature verified with the public key the request names, which must be the server's;
 * audience this origin; expiry within 24 hours) and a decryption of the aes128gcm body (RFC
 * 8291, written here with Node's crypto, independently of the library that encrypted it).
 */
export async function startFakePushService(vapidPublicKey: () => Promise<string>) {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-push-'));
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    join(dir, 'key.pem'),
    '-out',
    join(dir, 'cert.pem'),
    '-days',
    '2',
    '-subj',
    `/CN=${PUSH_HOST}`,
    '-addext',
    `subjectAltName=DNS:${PUSH_HOST}`,
  ]);
  const [key, cert] = await Promise.all([
    readFile(join(dir, 'key.pem')),
    readFile(join(dir, 'cert.pem')),
  ]);
  await rm(dir, { recursive: true, force: true });

  const browsers = new Map<string, { ecdh: ECDH; auth: Buffer }>();
  const failures = new Map<string, { statuses: number[]; headers: Record<string, string> }>();
  const gone = new Map<string, number>();
  const received: ReceivedPush[] = [];
  const rejected: string[] = [];
  let origin = '';

  const server: Server = createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const reject = (status: number, reason: string) => {
          rejected.push(reason);
          res.writeHead(status).end(reason);
        };
        const token = /^\/send\/([A-Za-z0-9_-]+)$/.exec(req.url ?? '')?.[1];
        const browser = token ? browsers.get(token) : undefined;
        if (req.method !== 'POST' || !token || !browser) return reject(404, 'no such subscription');
        let jwt: ReceivedPush['jwt'];
        try {
          jwt = checkVapid(req.headers.authorization, origin, await vapidPublicKey());
        } catch (error) {
          return reject(403, `VAPID: ${(error as Error).message}`);
        }
        if (req.headers['content-encoding'] !== 'aes128gcm') return reject(415, 'not aes128gcm');
        let plaintext: string;
        try {
          plaintext = decrypt(Buffer.concat(chunks), browser.ecdh, browser.auth);
        } catch (error) {
          return reject(400, `payload: ${(error as Error).message}`);
        }
        const failing = failures.get(token);
        const status = gone.get(token) ?? failing?.statuses.shift() ?? 201;
        const push: ReceivedPush = {
          token,
          status,
          ttl: Number(req.headers.ttl),
          urgency: header(req.headers.urgency),
          topic: header(req.headers.topic),
          jwt,
          message: JSON.parse(plaintext),
          at: Date.now(),
        };
        received.push(push);
        if (status !== 201) return res.writeHead(status, failing?.headers ?? {}).end();
        await service.onPush?.(push, plaintext);
        res.writeHead(201, { location: `/message/${randomBytes(8).toString('hex')}` }).end();
      })();
    });
  });
  const restoreResolver = resolveNames({ [PUSH_HOST]: ['127.0.0.1'] });
  let connections = 0;
  server.on('connection', () => (connections += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  origin = `https://${PUSH_HOST}:${port}`;

  const lookup: LookupFunction = (hostname, options, callback) => {
    if (hostname !== PUSH_HOST) {
      callback(new Error(`the fake push service resolves only ${PUSH_HOST}`), '', 4);
      return;
    }
    if (options.all) (callback as any)(null, [{ address: '127.0.0.1', family: 4 }]);
    else callback(null, '127.0.0.1', 4);
  };
  const agent = new Agent({ ca: cert, lookup, keepAlive: false });

  const service: FakePushService = {
    origin,
    agent,
    certificate: cert,
    connections: () => connections,
    received,
    rejected,
    subscribe() {
      const ecdh = createECDH('prime256v1');
      ecdh.generateKeys();
      const auth = randomBytes(16);
      const token = randomBytes(24).toString('base64url');
      browsers.set(token, { ecdh, auth });
      return {
        endpoint: `${origin}/send/${token}`,
        keys: {
          p256dh: ecdh.getPublicKey().toString('base64url'),
          auth: auth.toString('base64url'),
        },
      };
    },
    failNext(token, statuses, headers = {}) {
      failures.set(token, { statuses: [...statuses], headers });
    },
    forget(token, status = 410) {
      gone.set(token, status);
    },
    async close() {
      restoreResolver();
      agent.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return service;
}

/** The token a subscription's endpoint ends with. */
export const tokenOf = (subscription: SubscriptionJson) => subscription.endpoint.split('/').at(-1)!;

const header = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/** RFC 8292: `vapid t=<JWT>, k=<public key>`; the JWT signed ES256 by the key named. */
function checkVapid(
  authorization: string | undefined,
  audience: string,
  expectedKey: string,
): ReceivedPush['jwt'] {
  const match = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(authorization ?? '');
  if (!match) throw new Error(`no vapid authorization (${authorization})`);
  const [, jwt, k] = match as unknown as [string, string, string];
  if (k !== expectedKey) throw new Error('the key is not the server’s');
  const [head, body, signature] = jwt.split('.') as [string, string, string];
  const header = JSON.parse(Buffer.from(head, 'base64url').toString()) as { alg: string };
  if (header.alg !== 'ES256') throw new Error(`alg ${header.alg}`);
  const point = Buffer.from(k, 'base64url');
  const publicKey = createPublicKey({
    key: {
      kty: 'EC',
      crv: 'P-256',
      x: point.subarray(1, 33).toString('base64url'),
      y: point.subarray(33, 65).toString('base64url'),
    },
    format: 'jwk',
  });
  const signed = verify(
    'sha256',
    Buffer.from(`${head}.${body}`),
    { key: publicKey, dsaEncoding: 'ieee-p1363' },
    Buffer.from(signature, 'base64url'),
  );
  if (!signed) throw new Error('bad signature');
  const claims = JSON.parse(Buffer.from(body, 'base64url').toString()) as ReceivedPush['jwt'];
  const now = Date.now() / 1000;
  if (claims.aud !== audience) throw new Error(`audience ${claims.aud}, not ${audience}`);
  if (!(claims.exp > now && claims.exp <= now + 24 * 3600)) throw new Error('bad expiry');
  if (!/^(mailto:|https:)/.test(claims.sub)) throw new Error(`bad subject ${claims.sub}`);
  return claims;
}

/** RFC 8291 / RFC 8188: the aes128gcm body, decrypted with the browser's private key and auth secret. */
function decrypt(body: Buffer, ecdh: ECDH, auth: Buffer): string {
  const salt = body.subarray(0, 16);
  const rs = body.readUInt32BE(16);
  const idlen = body[20]!;
  const senderKey = body.subarray(21, 21 + idlen);
  if (idlen !== 65) throw new Error(`key id of ${idlen} bytes`);
  const secret = ecdh.computeSecret(senderKey);
  const info = (label: string, ...rest: Buffer[]) =>
    Buffer.concat([Buffer.from(label, 'ascii'), Buffer.from([0]), ...rest]);
  const ikm = Buffer.from(
    hkdfSync('sha256', secret, auth, info('WebPush: info', ecdh.getPublicKey(), senderKey), 32),
  );
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, info('Content-Encoding: aes128gcm'), 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, info('Content-Encoding: nonce'), 12));
  const records = body.subarray(21 + idlen);
  const parts: Buffer[] = [];
  for (let offset = 0, seq = 0; offset < records.length; offset += rs, seq += 1) {
    const record = records.subarray(offset, offset + rs);
    const iv = Buffer.from(nonce);
    // the record's sequence number, XORed into the nonce's last bytes (far below 2^32 records)
    iv.writeUInt32BE((iv.readUInt32BE(8) ^ seq) >>> 0, 8);
    const decipher = createDecipheriv('aes-128-gcm', cek, iv);
    decipher.setAuthTag(record.subarray(record.length - 16));
    const plain = Buffer.concat([
      decipher.update(record.subarray(0, record.length - 16)),
      decipher.final(),
    ]);
    let end = plain.length - 1;
    while (end >= 0 && plain[end] === 0) end -= 1;
    const last = offset + rs >= records.length;
    if (plain[end] !== (last ? 2 : 1)) throw new Error('bad padding delimiter');
    parts.push(plain.subarray(0, end));
  }
  return Buffer.concat(parts).toString('utf8');
}

import { createPublicKey, createVerify, randomUUID } from 'node:crypto';
import nock from 'nock';
import { sign } from '@octokit/webhooks-methods';
import { WEBHOOK_SECRET } from '../support/test-server.js';
import type { FakeAttempt } from '../support/fake-github-server.js';
import { GITHUB_API } from './github-app.js';

interface Event {
  guid: string;
  event: string;
  body: string;
}

export interface FakeDeliveryLog {
  /** Every attempt, newest first. */
  attempts: FakeAttempt[];
  /** The attempt ids switchboard asked to be repeated, in order. */
  redeliveryRequests: number[];
  /** How many times the log was read (pages). */
  pagesRead: number;
  /**
   * An event GitHub sent (or tried to): logged with this outcome, never sent to the server here.
   * `status_code` 0 is GitHub's "failed to connect"; `at` defaults to now.
   */
  logged(
    event: string,
    body: string,
    attempt?: { status_code?: number; status?: string; at?: Date; guid?: string },
  ): string;
  /** Sends an event to the server as GitHub does, and logs the attempt with the server's answer. */
  send(event: string, body: string, guid?: string): Promise<{ guid: string; status: number }>;
  /** From now on, redeliveries of `guid` fail this many times (GitHub cannot connect). */
  failRedeliveries(guid: string, times: number): void;
  /** Redeliveries asked for from now on wait until the function returned is called. */
  holdRedeliveries(): () => void;
  /** Redeliveries asked for, of one event. */
  requestsFor(guid: string): number;
  /** Resolves once every redelivery asked for so far has been sent and answered. */
  settled(): Promise<void>;
}

/**
 * The App's webhook delivery log, faked with nock (the network off): the list, paged by cursor
 * and newest first as GitHub pages it, and the redelivery endpoint, which answers 202 and then —
 * as GitHub does, moments later — sends the event again to `serverUrl()` with its own
 * X-GitHub-Delivery, signed with the webhook secret, and logs that attempt too. Every request
 * must carry a JWT signed with the App's private key (checked against its public key), as
 * GitHub checks it: these endpoints take no installation token.
 */
export function fakeDeliveryLog(options: {
  privateKey: string;
  appId: string;
  serverUrl: () => string;
}): FakeDeliveryLog {
  const publicKey = createPublicKey(options.privateKey);
  const events = new Map<string, Event>();
  const failing = new Map<string, number>();
  const inFlight = new Set<Promise<void>>();
  let nextId = 1_000_000;
  let held: Promise<void> | undefined;

  const log: FakeDeliveryLog = {
    attempts: [],
    redeliveryRequests: [],
    pagesRead: 0,
    logged(event, body, attempt = {}) {
      const guid = attempt.guid ?? randomUUID();
      events.set(guid, { guid, event, body });
      record(guid, {
        status_code: attempt.status_code ?? 0,
        status: attempt.status ?? 'failed to connect to host',
        at: attempt.at,
        redelivery: false,
      });
      return guid;
    },
    async send(event, body, guid = randomUUID()) {
      events.set(guid, { guid, event, body });
      const status = await post(guid);
      record(guid, {
        status_code: status,
        status: status === 200 ? 'OK' : `Invalid HTTP Response: ${status}`,
        redelivery: false,
      });
      return { guid, status };
    },
    failRedeliveries(guid, times) {
      failing.set(guid, times);
    },
    holdRedeliveries() {
      let release!: () => void;
      held = new Promise((resolve) => (release = resolve));
      return () => {
        held = undefined;
        release();
      };
    },
    requestsFor(guid) {
      const ids = new Set(log.attempts.filter((attempt) => attempt.guid === guid).map((a) => a.id));
      return log.redeliveryRequests.filter((id) => ids.has(id)).length;
    },
    async settled() {
      while (inFlight.size > 0) await Promise.all([...inFlight]);
    },
  };

  function record(
    guid: string,
    attempt: { status_code: number; status: string; at?: Date | undefined; redelivery: boolean },
  ): FakeAttempt {
    const { event, body } = events.get(guid)!;
    const payload = JSON.parse(body) as {
      action?: string;
      installation?: { id: number };
      repository?: { id: number };
    };
    const logged: FakeAttempt = {
      id: nextId++,
      guid,
      delivered_at: (attempt.at ?? new Date()).toISOString().replace(/\.\d+Z$/, 'Z'),
      redelivery: attempt.redelivery,
      duration: 0.05,
      status: attempt.status,
      status_code: attempt.status_code,
      event,
      action: payload.action ?? null,
      installation_id: payload.installation?.id ?? null,
      repository_id: payload.repository?.id ?? null,
    };
    log.attempts.unshift(logged);
    // GitHub lists newest first (by id); an attempt logged with an earlier time keeps its place.
    log.attempts.sort(
      (a, b) => Date.parse(b.delivered_at) - Date.parse(a.delivered_at) || b.id - a.id,
    );
    return logged;
  }

  async function post(guid: string): Promise<number> {
    const { event, body } = events.get(guid)!;
    const response = await fetch(`${options.serverUrl()}/api/github/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': event,
        'x-github-delivery': guid,
        'x-hub-signature-256': await sign(WEBHOOK_SECRET, body),
      },
      body,
    });
    await response.text();
    return response.status;
  }

  function checkJwt(authorization: string | string[] | undefined): boolean {
    const [scheme, token] = String(authorization ?? '').split(' ');
    const parts = token?.split('.') ?? [];
    if (scheme?.toLowerCase() !== 'bearer' || parts.length !== 3) return false;
    const verifier = createVerify('RSA-SHA256');
    verifier.update(`${parts[0]}.${parts[1]}`);
    if (!verifier.verify(publicKey, Buffer.from(parts[2]!, 'base64url'))) return false;
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString()) as {
      iss?: unknown;
      exp?: number;
    };
    return String(claims.iss) === options.appId && (claims.exp ?? 0) * 1000 > Date.now();
  }

  const unauthorized: [number, object] = [
    401,
    {
      message: 'A JSON web token could not be decoded',
      documentation_url: 'https://docs.github.com/rest',
    },
  ];

  nock(GITHUB_API)
    .persist()
    .get((path) => path.startsWith('/app/hook/deliveries'))
    .reply(function (path) {
      if (!checkJwt(this.req.headers.authorization)) return unauthorized;
      log.pagesRead++;
      const url = new URL(path, GITHUB_API);
      const perPage = Number(url.searchParams.get('per_page') ?? 30);
      const cursor = url.searchParams.get('cursor');
      // GitHub's cursor names the attempt a page starts after.
      const start = cursor ? log.attempts.findIndex((a) => `v1_${a.id}` === cursor) + 1 : 0;
      const page = log.attempts.slice(start, start + perPage);
      const more = start + perPage < log.attempts.length;
      const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
      if (more) {
        headers.link = `<${GITHUB_API}/app/hook/deliveries?per_page=${perPage}&cursor=v1_${page.at(-1)!.id}>; rel="next"`;
      }
      return [200, page, headers];
    });

  nock(GITHUB_API)
    .persist()
    .post((path) => /^\/app\/hook\/deliveries\/\d+\/attempts$/.test(path))
    .reply(function (path) {
      if (!checkJwt(this.req.headers.authorization)) return unauthorized;
      const id = Number(/\/deliveries\/(\d+)\//.exec(path)![1]);
      const attempt = log.attempts.find((logged) => logged.id === id);
      if (!attempt) return [404, { message: 'Not Found' }];
      log.redeliveryRequests.push(id);
      // Redelivered after GitHub has answered, as GitHub does it.
      const wait = held ?? Promise.resolve();
      const redelivery = wait
        .then(() => new Promise((resolve) => setTimeout(resolve, 10)))
        .then(async () => {
          const fails = failing.get(attempt.guid) ?? 0;
          if (fails > 0) {
            failing.set(attempt.guid, fails - 1);
            record(attempt.guid, {
              status_code: 0,
              status: 'failed to connect to host',
              redelivery: true,
            });
            return;
          }
          const status = await post(attempt.guid);
          record(attempt.guid, {
            status_code: status,
            status: status === 200 ? 'OK' : `Invalid HTTP Response: ${status}`,
            redelivery: true,
          });
        });
      inFlight.add(redelivery);
      void redelivery.finally(() => inFlight.delete(redelivery));
      return [202, {}];
    });

  return log;
}

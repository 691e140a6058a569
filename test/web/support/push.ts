import { expect } from 'vitest';
import type { TestServer } from '../../support/test-server.js';
import { signInLink } from './console.js';
import type { SubscriptionJson } from './fake-push-service.js';

/** A console session made as a browser makes one (the link, then a page), without a browser. */
export interface FetchSession {
  cookie: string;
  csrf: string;
}

export async function signInByFetch(server: TestServer, token: string): Promise<FetchSession> {
  const signedIn = await fetch(await signInLink(server, token), { redirect: 'manual' });
  expect(signedIn.status).toBe(303);
  const cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!;
  const page = await (await fetch(server.url, { headers: { cookie } })).text();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
  return { cookie, csrf };
}

/** Hands a subscription in as the console's Notify me does: a form POST, CSRF token, Origin. */
export function postSubscription(
  server: TestServer,
  subscription: SubscriptionJson,
  { cookie, csrf, origin = server.url }: Partial<FetchSession> & { origin?: string | null } = {},
): Promise<Response> {
  return fetch(`${server.url}/push/subscriptions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(cookie && { cookie }),
      ...(origin && { origin }),
    },
    body: new URLSearchParams({
      ...(csrf && { _csrf: csrf }),
      endpoint: subscription.endpoint,
      p256dh: subscription.keys.p256dh,
      auth: subscription.keys.auth,
    }),
    redirect: 'manual',
  });
}

/** The server's VAPID public key, as its pages give it to browsers. */
export async function vapidPublicKey(server: TestServer): Promise<string> {
  const [row] = await server.sql<{ public_key: string }[]>`select public_key from web_push_keys`;
  return row!.public_key;
}

import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  buildTenancyWorld,
  checkVerb,
  foreignPairs,
  HUMANS,
  type Caller,
  type TenancyWorld,
} from './support/tenancy-world.js';

let server: TestServer;
let world: TenancyWorld;
/** Each human's console session: its cookie and the CSRF token its pages carry. */
const sessions = {} as Record<Caller, { cookie: string; csrf: string }>;

beforeAll(async () => {
  server = await startTestServer();
  world = await buildTenancyWorld(server);
  for (const human of HUMANS) sessions[human] = await signIn(world.tokens[human]);
});
afterAll(async () => {
  await server?.stop();
});

/** Signs in as `switchboard open` does, without a browser: the link's answer sets the cookie. */
async function signIn(token: string) {
  const link = await server.api(token, 'POST', '/web/sign-in-links');
  expect(link.status).toBe(201);
  const redeemed = await fetch(link.body.url, { redirect: 'manual' });
  expect(redeemed.status).toBe(303);
  const cookie = redeemed.headers.get('set-cookie')!.split(';')[0]!;
  const page = await (await fetch(`${server.url}/`, { headers: { cookie } })).text();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? /"csrf":"([^"]+)"/.exec(page)?.[1];
  expect(csrf, 'the console page carries a CSRF token').toBeTruthy();
  return { cookie, csrf: csrf! };
}

/** The console's pages and forms that take a todo id: each a path and, for a form, its fields. */
const REQUESTS: Record<string, (id: number) => { path: string; form?: Record<string, string> }> = {
  'todo page': (id) => ({ path: `/todos/${id}` }),
  'approval page': (id) => ({ path: `/approvals/${id}` }),
  approve: (id) => ({ path: `/approvals/${id}/decide`, form: { verdict: 'allow', note: 'yes' } }),
  deny: (id) => ({ path: `/approvals/${id}/decide`, form: { verdict: 'deny', note: 'no' } }),
  cancel: (id) => ({ path: `/todos/${id}/cancel`, form: { reason: 'mine now', next: '/' } }),
  'release quarantine': (id) => ({ path: `/todos/${id}/release-quarantine`, form: {} }),
  reply: (id) => ({ path: `/todos/${id}/reply`, form: { text: 'hello' } }),
};

/** The whole answer, as a browser (or htmx) would act on it. */
async function send(caller: Caller, request: string, id: number, htmx: boolean) {
  const { path, form } = REQUESTS[request]!(id);
  const session = sessions[caller];
  const response = await fetch(`${server.url}${path}`, {
    method: form ? 'POST' : 'GET',
    headers: {
      cookie: session.cookie,
      ...(form ? { origin: server.url, 'content-type': 'application/x-www-form-urlencoded' } : {}),
      ...(htmx ? { 'hx-request': 'true' } : {}),
    },
    body: form ? new URLSearchParams({ ...form, _csrf: session.csrf }) : undefined,
    redirect: 'manual',
  });
  const headers = ['location', 'hx-retarget', 'hx-reswap', 'hx-trigger', 'hx-redirect']
    .map((name) => `${name}=${response.headers.get(name)}`)
    .join(' ');
  return `${response.status} ${headers}\n${await response.text()}`;
}

const humanPairs = () => foreignPairs().filter(({ caller }) => HUMANS.includes(caller as never));

test('the console’s matrix covers every non-admin human’s foreign approvals', () => {
  expect(humanPairs().map(({ caller, target }) => `${caller}:${target}`)).toEqual([
    'alice:bob-approval',
    'alice:bbot-approval',
    'alice:admin-approval',
    'bob:alice-approval',
    'bob:abot-approval',
    'bob:admin-approval',
  ]);
});

for (const htmx of [false, true]) {
  test.each(Object.keys(REQUESTS))(
    `tenancy matrix (console${htmx ? ', htmx' : ''}): %s of a todo the caller cannot read answers as a missing id and changes nothing`,
    async (request) => {
      const wrong = await checkVerb(
        world,
        humanPairs(),
        (caller, id) => send(caller, request, id, htmx),
        // htmx swaps no error answer: it gets the message for the page's alert area instead.
        () =>
          htmx
            ? /^200 .*hx-retarget=#flash .*\n<p>(todo|approval) #\d+ not found<\/p>$/
            : /^404 [^\n]*\n<!doctype html>[\s\S]*(todo|approval) #\d+ not found/i,
      );
      expect(wrong).toEqual([]);
    },
  );
}

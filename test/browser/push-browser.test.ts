import type { CDPSession, Worker } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { launchBrowser, type TestBrowser, type WatchedPage } from '../web/support/browser.js';
import { addHuman, signIn, waitLive } from '../web/support/console.js';
import {
  startFakePushService,
  type FakePushService,
  type SubscriptionJson,
} from '../web/support/fake-push-service.js';
import { vapidPublicKey } from '../web/support/push.js';

// Web Push in real Chromium, as far as it goes here. Chromium's own push service (Google's FCM)
// cannot be reached from this machine, and a Playwright context (a private profile) has none at
// all, so two seams are stood in for, and only those two:
// - `PushManager.subscribe` / `getSubscription` return a subscription made by the test's fake
//   push service (its endpoint and the browser's keys), as Chromium's would return FCM's;
// - the fake push service, having verified the VAPID token and decrypted the payload, hands the
//   plaintext to the page's real service worker through DevTools (`ServiceWorker.deliverPushMessage`),
//   as Chromium's push service client would after decrypting it.
// Everything between is real: the page's click, its POST (CSRF token, Origin, cookie), the
// server's sending, /sw.js registered under the console's CSP, and the notifications it shows.
// Where the browser has no notification platform (chrome-headless-shell, which `npm install`
// brings), a third seam is stood in for: the notifications the platform would show
// (standInNotifications).

let server: TestServer;
let browser: TestBrowser;
let push: FakePushService;
let ada: string;

beforeAll(async () => {
  push = await startFakePushService(() => vapidPublicKey(server));
  server = await startTestServer({
    sweepIntervalMs: 200,
    web: { push: { sweepMs: 200, retryDelaysMs: [100] } },
    outbound: { allow: ['127.0.0.1/32'], ca: push.certificate },
  });
  ada = await addHuman(server, 'ada');
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await push?.close();
});

/**
 * The notification platform, where the browser has none: the page reads the permission the test
 * granted (grantNotifications), and the service worker's registration keeps what it is asked to
 * show, one per tag, until closed, as the platform does. Elsewhere this does nothing.
 */
async function standInNotifications(w: WatchedPage) {
  if (browser.notifies) return;
  await w.context.addInitScript(() => {
    const notification = (globalThis as any).Notification;
    const request = notification.requestPermission.bind(notification);
    Object.defineProperty(notification, 'permission', {
      get: () => (globalThis as any).testNotificationPermission ?? 'default',
    });
    notification.requestPermission = async () =>
      ((globalThis as any).testNotificationPermission = await request());
  });
  await w.context.route(`${server.url}/sw.js`, async (route) => {
    const response = await route.fetch();
    const standIn = `(${String(() => {
      let shown: { tag: string; close(): void }[] = [];
      const registration = (globalThis as any).registration;
      registration.showNotification = (title: string, options: Record<string, any> = {}) => {
        const tag = options.tag ?? '';
        shown = shown.filter((n) => !tag || n.tag !== tag);
        const notification = {
          title,
          body: options.body ?? '',
          tag,
          data: options.data ?? null,
          silent: options.silent === true,
          close: () => (shown = shown.filter((n) => n !== notification)),
        };
        shown.push(notification);
        return Promise.resolve();
      };
      registration.getNotifications = (filter: { tag?: string } = {}) =>
        Promise.resolve(shown.filter((n) => !filter.tag || n.tag === filter.tag));
    })})();\n`;
    await route.fulfill({ response, body: standIn + (await response.text()) });
  });
}

/** The human says yes to the browser's prompt: granted through the context. */
async function grantNotifications(w: WatchedPage) {
  await w.context.grantPermissions(['notifications'], { origin: server.url });
  if (browser.notifies) return;
  await w.context.addInitScript(() => ((globalThis as any).testNotificationPermission = 'granted'));
  await w.page.evaluate(() => ((globalThis as any).testNotificationPermission = 'granted'));
}

/** Stands in for Chromium's push service client: `subscription` is what it would have made. */
async function standInPushManager(w: WatchedPage, subscription: SubscriptionJson) {
  await w.context.addInitScript((made: SubscriptionJson) => {
    const calls: { applicationServerKey: unknown; userVisibleOnly: unknown }[] = [];
    const key = 'test.push-subscribed';
    const asSubscription = () => ({ endpoint: made.endpoint, toJSON: () => made });
    const manager = (globalThis as any).PushManager.prototype;
    manager.subscribe = (options: { applicationServerKey: unknown; userVisibleOnly: unknown }) => {
      calls.push(options);
      (globalThis as any).localStorage.setItem(key, '1');
      return Promise.resolve(asSubscription());
    };
    manager.getSubscription = () =>
      Promise.resolve((globalThis as any).localStorage.getItem(key) ? asSubscription() : null);
    Object.assign(globalThis, { pushCalls: calls });
  }, subscription);
}

/** The console's service worker registration, and a way to hand it a push as Chromium would. */
async function serviceWorkerOf(w: WatchedPage) {
  const cdp: CDPSession = await w.context.newCDPSession(w.page);
  const registrations: { registrationId: string; scopeURL: string; isDeleted: boolean }[] = [];
  cdp.on('ServiceWorker.workerRegistrationUpdated', (event) =>
    registrations.push(...event.registrations),
  );
  await cdp.send('ServiceWorker.enable');
  await expect
    .poll(() => registrations.some((r) => r.scopeURL === `${server.url}/` && !r.isDeleted))
    .toBe(true);
  const { registrationId } = registrations.find((r) => r.scopeURL === `${server.url}/`)!;
  const worker = async (): Promise<Worker> =>
    w.context.serviceWorkers().find((sw) => sw.url() === `${server.url}/sw.js`) ??
    (await w.context.waitForEvent('serviceworker'));
  return {
    deliver: (data: string) =>
      cdp.send('ServiceWorker.deliverPushMessage', { origin: server.url, registrationId, data }),
    /** The notifications the service worker has up, as the platform holds them. */
    notifications: async () =>
      (await worker()).evaluate(async () =>
        (await (globalThis as any).registration.getNotifications()).map((n: any) => ({
          title: n.title,
          body: n.body,
          tag: n.tag,
          data: n.data,
          silent: n.silent,
        })),
      ),
  };
}

/**
 * Runs `check`; when it fails, the error also carries the todo's history (what the server pushed,
 * and how the push service answered) and what the push service was handed, so that a failure
 * says which side lost the push.
 */
async function withHistoryOnFailure(todoId: number, check: () => Promise<unknown>) {
  try {
    await check();
  } catch (error) {
    const history = await server.sql`
      select action, data from todo_events where todo_id = ${todoId} order by id`;
    throw new Error(
      `${(error as Error).message}\nhistory: ${JSON.stringify(history)}\npushes handed to the service: ${push.received.length}`,
      { cause: error },
    );
  }
}

test('Notify me subscribes through PushManager and hands the subscription in; the real service worker shows the push, and replaces it when the approval is decided', async () => {
  const w = await browser.newPage();
  const subscription = push.subscribe();
  await standInPushManager(w, subscription);
  await standInNotifications(w);
  await signIn(w.page, server, ada);
  const button = w.page.getByRole('button', { name: 'Notify me' });
  // The human says yes to the browser's prompt.
  await grantNotifications(w);
  await button.click();
  await expect.poll(() => button.isHidden()).toBe(true);

  // The page subscribed for the server's key, user-visible only, and handed it in for ada.
  const key = await vapidPublicKey(server);
  // (The button hides once permission is granted; the service worker and the subscription follow.)
  await expect
    .poll(() => w.page.evaluate(() => (globalThis as any).pushCalls))
    .toEqual([{ userVisibleOnly: true, applicationServerKey: key }]);
  await expect
    .poll(
      async () =>
        await server.sql`
          select p.name, s.p256dh, s.auth from web_push_subscriptions s
          join principals p on p.id = s.principal_id where s.endpoint = ${subscription.endpoint}`,
    )
    .toEqual([{ name: 'ada', ...subscription.keys }]);

  // The service worker, registered from the page under its CSP (worker-src 'self').
  const sw = await serviceWorkerOf(w);
  push.onPush = async (_push, plaintext) => {
    await sw.deliver(plaintext);
  };
  try {
    // With no console page in front of ada, the push becomes a notification.
    await w.page.goto('about:blank');
    const { todo } = (
      await server.api(ada, 'POST', '/approvals', {
        question: 'Ship the release?',
        body: '{"command":"make release TOKEN=hidden-input"}',
      })
    ).body;
    await withHistoryOnFailure(todo.id, () =>
      expect
        .poll(() => sw.notifications())
        .toEqual([
          {
            title: `switchboard: approval #${todo.id} waits for you`,
            body: 'Ship the release?',
            tag: `approval-${todo.id}`,
            data: { id: todo.id, url: `/approvals/${todo.id}` },
            silent: false,
          },
        ]),
    );
    // Decided elsewhere (the API, as the CLI does): the notification says so, quietly.
    expect((await server.api(ada, 'POST', `/todos/${todo.id}/approve`, {})).status).toBe(200);
    await expect
      .poll(() => sw.notifications())
      .toEqual([
        {
          title: `switchboard: approval #${todo.id} allowed by ada`,
          body: 'Ship the release?',
          tag: `approval-${todo.id}`,
          data: { id: todo.id, url: `/approvals/${todo.id}` },
          silent: true,
        },
      ]);
    // What a click opens (the notification's data.url): the approval's page, with its outcome.
    await w.page.goto(`${server.url}/approvals/${todo.id}`);
    await expect
      .poll(() => w.page.locator(`#live-approval-${todo.id} .outcome`).textContent())
      .toContain('allowed by ada');

    // With a console page in front (this one, focused), the service worker shows nothing: the
    // page's own notification tells of it.
    await waitLive(w.page);
    const received = push.received.length;
    const second = (await server.api(ada, 'POST', '/approvals', { question: 'And this?' })).body
      .todo;
    await expect.poll(() => push.received.length).toBe(received + 1);
    expect(push.received.at(-1)!.message).toEqual({
      type: 'approval',
      id: second.id,
      title: 'And this?',
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await sw.notifications()).map((n: { tag: string }) => n.tag)).not.toContain(
      `approval-${second.id}`,
    );
  } finally {
    push.onPush = undefined;
  }
  expect(push.rejected).toEqual([]);
  expect(w.refusals()).toEqual([]);
  expect(w.errors).toEqual([]);
});

test('a browser that already said yes hands its subscription in again after a new sign-in, bound to the new session', async () => {
  const w = await browser.newPage();
  const subscription = push.subscribe();
  await standInPushManager(w, subscription);
  await standInNotifications(w);
  await grantNotifications(w);
  await signIn(w.page, server, ada);
  const sessionOf = async () =>
    (
      await server.sql<{ session_id: number }[]>`
        select session_id from web_push_subscriptions where endpoint = ${subscription.endpoint}`
    )[0]?.session_id;
  await expect.poll(sessionOf).toBeTypeOf('number');
  const first = await sessionOf();
  // Signing out deletes it with the session…
  await w.page.getByRole('button', { name: 'Sign out' }).click();
  await w.page.waitForURL(/\/sign-in$/);
  expect(await sessionOf()).toBeUndefined();
  // …and the next sign-in in this browser hands it in again, once.
  await signIn(w.page, server, ada);
  await expect.poll(sessionOf).toBeTypeOf('number');
  expect(await sessionOf()).not.toBe(first);
  expect(await w.page.evaluate(() => (globalThis as any).pushCalls)).toEqual([]);
  expect(w.refusals()).toEqual([]);
});

test('where the browser has no push service (a private window, here), Notify me still turns on page notifications and hands nothing in', async () => {
  const w = await browser.newPage();
  await standInNotifications(w);
  await signIn(w.page, server, ada);
  const before = await server.sql`select id from web_push_subscriptions`;
  await grantNotifications(w);
  await w.page.getByRole('button', { name: 'Notify me' }).click();
  await expect
    .poll(() => w.messages.filter((m) => m.includes('Web Push is not available here')))
    .toHaveLength(1);
  expect(await server.sql`select id from web_push_subscriptions`).toEqual(before);
  expect(w.refusals()).toEqual([]);
  expect(w.errors).toEqual([]);
});

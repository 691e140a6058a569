import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { inject } from 'vitest';
import { CHROMIUM_ARGS } from './find-chromium.js';

export interface TestBrowser {
  browser: Browser;
  /**
   * Whether the browser shows notifications. chrome-headless-shell (the browser that comes with
   * `npm install`) has no notification platform: Notification.permission is always "denied" and
   * a service worker's showNotification is refused. There, pages get a stand-in (standIn…).
   */
  notifies: boolean;
  /** A fresh context (its own cookies) and page, watched for console messages and CSP refusals. */
  newPage(options?: Parameters<Browser['newContext']>[0]): Promise<WatchedPage>;
  close(): Promise<void>;
}

export interface WatchedPage {
  page: Page;
  context: BrowserContext;
  /** Every console message the page printed, as `type: text`. */
  messages: string[];
  /** Console messages that say the Content-Security-Policy refused something. */
  refusals(): string[];
  /** Uncaught exceptions in the page. */
  errors: Error[];
}

/**
 * One real headless Chromium per test file (Playwright gives it a fresh, temporary profile and
 * removes it on close); a context of its own, so cookies of its own, per test.
 */
export async function launchBrowser(): Promise<TestBrowser> {
  // Found once for the run by the global setup (test/web/support/find-chromium.ts).
  const { path } = inject('chromium');
  const browser = await chromium.launch({ executablePath: path, args: CHROMIUM_ARGS });
  const contexts: BrowserContext[] = [];
  return {
    browser,
    notifies: await showsNotifications(browser),
    async newPage(options) {
      const context = await browser.newContext(options);
      contexts.push(context);
      const page = await context.newPage();
      const messages: string[] = [];
      const errors: Error[] = [];
      page.on('console', (message) => messages.push(`${message.type()}: ${message.text()}`));
      page.on('pageerror', (error) => errors.push(error));
      return {
        page,
        context,
        messages,
        errors,
        refusals: () => messages.filter((text) => /Refused to|Content Security Policy/i.test(text)),
      };
    },
    async close() {
      await Promise.all(contexts.map((context) => context.close().catch(() => {})));
      await browser.close();
    },
  };
}

/** Whether a page granted the permission reads it as granted (the notification platform's answer). */
async function showsNotifications(browser: Browser): Promise<boolean> {
  const origin = 'http://localhost';
  const context = await browser.newContext();
  try {
    await context.route(`${origin}/`, (route) =>
      route.fulfill({ contentType: 'text/html', body: '' }),
    );
    await context.grantPermissions(['notifications'], { origin });
    const page = await context.newPage();
    await page.goto(`${origin}/`);
    return (await page.evaluate(() => (globalThis as any).Notification?.permission)) === 'granted';
  } finally {
    await context.close();
  }
}

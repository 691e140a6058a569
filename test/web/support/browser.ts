import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Debian's chromium (`apt-get install chromium`; .ci/run installs it). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface TestBrowser {
  browser: Browser;
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
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  const contexts: BrowserContext[] = [];
  return {
    browser,
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

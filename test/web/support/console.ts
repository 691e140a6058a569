import { expect } from 'vitest';
import type { Page } from 'playwright-core';
import type { TestServer } from '../../support/test-server.js';

/** Mints a one-time sign-in link for the token's human, as `switchboard open` does. */
export async function signInLink(server: TestServer, token: string): Promise<string> {
  const { status, body } = await server.api(token, 'POST', '/web/sign-in-links');
  expect(status).toBe(201);
  return body.url as string;
}

/** Signs the page's context in as the token's human and waits for its approvals page to be live. */
export async function signIn(page: Page, server: TestServer, token: string): Promise<void> {
  await page.goto(await signInLink(server, token));
  await expect.poll(() => new URL(page.url()).pathname).toBe('/');
  await waitLive(page);
}

/** Waits until the page's event stream is open (the indicator says "live"). */
export async function waitLive(page: Page): Promise<void> {
  await page.locator('#live-status', { hasText: /^live$/ }).waitFor({ timeout: 10_000 });
}

/** A human added by the admin, with a token of their own. */
export async function addHuman(
  server: TestServer,
  name: string,
  extra: { github_login?: string; is_admin?: boolean } = {},
): Promise<string> {
  const { status, body } = await server.api(server.adminToken, 'POST', '/humans', {
    name,
    ...extra,
  });
  expect(status).toBe(201);
  return body.token as string;
}

/** The approval card of one todo id on the page. */
export const card = (page: Page, id: number) => page.locator(`#live-approval-${id}`);

import { expect } from 'vitest';

/** A page as a browser with the console's session cookie got it. */
export interface Visit {
  status: number;
  headers: Headers;
  html: string;
}

/** The console, fetched as a browser that keeps the session cookie (`cookie`). */
export async function visit(url: string, cookie: string): Promise<Visit> {
  const response = await fetch(url, {
    headers: { cookie, accept: 'text/html' },
    redirect: 'manual',
  });
  return { status: response.status, headers: response.headers, html: await response.text() };
}

/**
 * Opens the link `switchboard github setup` prints, as a browser: the one-time sign-in, then the
 * setup page it lands on. Returns the session cookie and the page.
 */
export async function openSetupLink(link: string): Promise<{ cookie: string; page: Visit }> {
  const signIn = await fetch(link, { redirect: 'manual' });
  expect(signIn.status).toBe(303);
  const session = signIn.headers
    .getSetCookie()
    .map((line) => line.split(';')[0]!)
    .find((pair) => /^(__Host-)?switchboard_session=/.test(pair));
  expect(session).toBeDefined();
  const location = new URL(signIn.headers.get('location')!, link);
  return { cookie: session!, page: await visit(location.toString(), session!) };
}

const ENTITIES: Record<string, string> = {
  '&quot;': '"',
  '&#39;': "'",
  '&lt;': '<',
  '&gt;': '>',
  '&amp;': '&',
};
const unescape = (text: string) => text.replace(/&(quot|#39|lt|gt|amp);/g, (e) => ENTITIES[e]!);

/** The setup page's form: where it posts, and the manifest in its hidden field. */
export function setupForm(html: string): { action: string; manifest: Record<string, any> } {
  const action = /<form id="github-setup" method="post" action="([^"]+)"/.exec(html)?.[1];
  const manifest = /<input type="hidden" name="manifest" value="([^"]*)"/.exec(html)?.[1];
  expect(action, 'the setup page has its form').toBeDefined();
  return {
    action: unescape(action!),
    manifest: JSON.parse(unescape(manifest!)) as Record<string, any>,
  };
}

/**
 * What the admin does on GitHub's pages: the form posts the manifest, GitHub shows its "new App"
 * page, and "Create GitHub App" registers it and sends the browser back. Returns where to.
 */
export async function createOnGitHub(
  form: { action: string; manifest: Record<string, unknown> },
  name?: string,
): Promise<string> {
  const posted = await fetch(form.action, {
    method: 'POST',
    body: new URLSearchParams({ manifest: JSON.stringify(form.manifest) }),
  });
  const page = await posted.text();
  expect(posted.status, page).toBe(200);
  const field = (n: string) =>
    unescape(new RegExp(`name="${n}" value="([^"]*)"`).exec(page)?.[1] ?? '');
  const origin = new URL(form.action).origin;
  const created = await fetch(`${origin}/settings/apps/new/create`, {
    method: 'POST',
    body: new URLSearchParams({
      manifest: field('manifest'),
      state: field('state'),
      org: field('org'),
      name: name ?? field('name'),
    }),
    redirect: 'manual',
  });
  expect(created.status).toBe(302);
  return created.headers.get('location')!;
}

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load as loadYaml } from 'js-yaml';
import { PACKAGE_ROOT } from '../../platform/package-root.js';
import type { GitHubHost } from '../../platform/config/github-host.js';

/** An organization's login, as GitHub allows it (and nothing a URL path could be bent with). */
export const ORG_LOGIN = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;

/** app.yml, read once: the App's name, description, events and permissions. */
let appYml: Record<string, unknown> | undefined;
function readAppYml(): Record<string, unknown> {
  appYml ??= loadYaml(readFileSync(join(PACKAGE_ROOT, 'app.yml'), 'utf8')) as Record<
    string,
    unknown
  >;
  return appYml;
}

/**
 * The manifest GitHub registers the App from (docs: "Registering a GitHub App from a manifest"):
 * app.yml as it stands, with this server's addresses put in — deliveries to its
 * /api/github/webhooks (or to the smee.io channel it forwards from), GitHub's redirect back to
 * its setup callback, and its console's GitHub sign-in as the OAuth callback.
 */
export function appManifest(options: {
  /** The base of this server's URLs (SWITCHBOARD_PUBLIC_URL). */
  publicUrl: string;
  /** Where GitHub sends deliveries. */
  webhookUrl: string;
}): Record<string, unknown> {
  const yml = readAppYml();
  const hook = (yml.hook_attributes ?? {}) as Record<string, unknown>;
  return {
    ...yml,
    hook_attributes: { ...hook, url: options.webhookUrl, active: true },
    redirect_url: `${options.publicUrl}/github/setup/callback`,
    callback_urls: [`${options.publicUrl}/auth/github/callback`],
    request_oauth_on_install: false,
  };
}

/** Where the setup page's form posts the manifest: the account's, or an organization's, page. */
export function manifestFormAction(host: GitHubHost, org: string | null, state: string): string {
  const path = org ? `/organizations/${org}/settings/apps/new` : '/settings/apps/new';
  return `${host.web}${path}?state=${encodeURIComponent(state)}`;
}

/** Where GitHub delivers: the smee.io channel the server forwards from, else its own endpoint. */
export function webhookUrlOf(publicUrl: string, webhookProxyUrl: string | undefined): string {
  return webhookProxyUrl ?? `${publicUrl}/api/github/webhooks`;
}

import type { Db } from '../../platform/db/open-database.js';
import type { SecretBox } from '../../platform/secrets/secret-box.js';

/** What GitHub's conversion of a manifest code answers (`POST /app-manifests/{code}/conversions`). */
export interface ManifestConversion {
  id: number;
  slug: string;
  name: string;
  html_url: string;
  owner?: { login?: string } | null;
  client_id: string;
  client_secret: string;
  webhook_secret: string | null;
  pem: string;
}

/** The App as `switchboard github setup` stored it, its secrets opened. */
export interface StoredGitHubApp {
  appId: string;
  slug: string;
  name: string;
  htmlUrl: string;
  ownerLogin: string | null;
  clientId: string;
  clientSecret: string;
  webhookSecret: string | null;
  privateKey: string;
  createdBy: string;
  createdAt: Date;
}

interface Row {
  app_id: string;
  slug: string;
  name: string;
  html_url: string;
  owner_login: string | null;
  client_id: string;
  client_secret: Buffer;
  webhook_secret: Buffer | null;
  private_key: Buffer;
  created_by: string;
  created_at: Date;
}

/**
 * Keeps the App GitHub made from the manifest, its secrets sealed with the server key; an App
 * set up before is replaced (the table holds one row), and every process hears of it (NOTIFY,
 * migration 0036).
 */
export async function saveGitHubApp(
  db: Db,
  box: SecretBox,
  app: ManifestConversion,
  createdBy: string,
): Promise<StoredGitHubApp> {
  const [row] = await db<Row[]>`
    insert into github_app (app_id, slug, name, html_url, owner_login, client_id, client_secret,
                            webhook_secret, private_key, created_by)
    values (${app.id}, ${app.slug}, ${app.name}, ${app.html_url}, ${app.owner?.login ?? null},
            ${app.client_id}, ${box.seal(app.client_secret)},
            ${app.webhook_secret === null ? null : box.seal(app.webhook_secret)},
            ${box.seal(app.pem)}, ${createdBy})
    on conflict (one_row) do update set
      app_id = excluded.app_id, slug = excluded.slug, name = excluded.name,
      html_url = excluded.html_url, owner_login = excluded.owner_login,
      client_id = excluded.client_id, client_secret = excluded.client_secret,
      webhook_secret = excluded.webhook_secret, private_key = excluded.private_key,
      created_by = excluded.created_by, created_at = now()
    returning app_id::text, slug, name, html_url, owner_login, client_id, client_secret,
              webhook_secret, private_key, created_by, created_at`;
  return opened(box, row!);
}

/** The stored App with its secrets opened, or null when none was set up. */
export async function readGitHubApp(db: Db, box: SecretBox): Promise<StoredGitHubApp | null> {
  const [row] = await db<Row[]>`
    select app_id::text, slug, name, html_url, owner_login, client_id, client_secret,
           webhook_secret, private_key, created_by, created_at
    from github_app`;
  return row ? opened(box, row) : null;
}

/** Whether an App is stored, whether or not this process can open it. */
export async function hasStoredGitHubApp(db: Db): Promise<boolean> {
  const [row] = await db`select 1 from github_app`;
  return row !== undefined;
}

function opened(box: SecretBox, row: Row): StoredGitHubApp {
  return {
    appId: row.app_id,
    slug: row.slug,
    name: row.name,
    htmlUrl: row.html_url,
    ownerLogin: row.owner_login,
    clientId: row.client_id,
    clientSecret: box.open(row.client_secret),
    webhookSecret: row.webhook_secret ? box.open(row.webhook_secret) : null,
    privateKey: box.open(row.private_key),
    createdBy: row.created_by,
    createdAt: row.created_at,
  };
}

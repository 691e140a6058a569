import type { Db } from '../../platform/db/open-database.js';

/** switchboard's own CLI: the one client that may act as a human (on the API only). */
export const CLI_CLIENT_ID = 'switchboard-cli';

export type OAuthClientSource = 'registered' | 'document' | 'builtin';

/** What a client said about itself, as checked when it registered or its document was read. */
export interface OAuthClientMetadata {
  redirect_uris: string[];
  client_name?: string;
  client_uri?: string;
  token_endpoint_auth_method?: string;
  grant_types?: string[];
  response_types?: string[];
  [key: string]: unknown;
}

export interface OAuthClient {
  client_id: string;
  source: OAuthClientSource;
  metadata: OAuthClientMetadata;
  created_at: Date;
  fetched_at: Date | null;
}

export async function findOAuthClient(db: Db, clientId: string): Promise<OAuthClient | undefined> {
  const [client] = await db<OAuthClient[]>`
    select * from oauth_clients where client_id = ${clientId}`;
  return client;
}

/** How long a registration nobody ever granted is kept: enough to finish a sign-in, and retry it. */
const UNUSED_REGISTRATION_HOURS = 24;

/**
 * A dynamic client registration (RFC 7591). Registrations are open to anyone, so those that
 * never got a grant are dropped after a day, at the next registration.
 */
export async function registerOAuthClient(
  db: Db,
  clientId: string,
  metadata: OAuthClientMetadata,
): Promise<OAuthClient> {
  await db`
    delete from oauth_clients c
    where source = 'registered'
      and created_at < now() - make_interval(hours => ${UNUSED_REGISTRATION_HOURS})
      and not exists (select from oauth_grants g where g.client_id = c.client_id)`;
  const [client] = await db<OAuthClient[]>`
    insert into oauth_clients (client_id, source, metadata)
    values (${clientId}, 'registered', ${db.json(metadata as never)})
    returning *`;
  return client!;
}

/** A client ID metadata document as just fetched from its URL (the client's id). */
export async function saveClientDocument(
  db: Db,
  clientId: string,
  metadata: OAuthClientMetadata,
): Promise<OAuthClient> {
  const [client] = await db<OAuthClient[]>`
    insert into oauth_clients (client_id, source, metadata, fetched_at)
    values (${clientId}, 'document', ${db.json(metadata as never)}, now())
    on conflict (client_id) do update set metadata = excluded.metadata, fetched_at = now()
      where oauth_clients.source = 'document'
    returning *`;
  if (!client) throw new Error(`client ${clientId} is not a metadata document`);
  return client;
}

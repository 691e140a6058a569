import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../../platform/db/open-database.js';
import type { TokenKind } from '../../contract/token.js';
import type { Principal } from '../actor.js';

const PREFIX = 'sbk_';
const TOKEN = /^sbk_[A-Za-z0-9_-]{43}$/;

/** SHA-256 of the token: what is stored, and what a presented token is looked up by. */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** The grant an OAuth access token was issued under (src/data/oauth/oauth-grants.ts). */
export interface TokenGrant {
  id: number;
  client_id: string;
  /** The resource the token is for: `<public URL>/mcp` or `<public URL>/api/v1`. */
  resource: string;
  /** When the token stops working; null for the CLI's, which lasts until revoked. */
  expires_at: Date | null;
}

/** Who a bearer token acts as, and under which grant (null: a static token, good everywhere). */
export interface Bearer {
  principal: Principal;
  grant: TokenGrant | null;
}

export { TOKEN_KINDS, type TokenKind } from '../../contract/token.js';

/**
 * Mints a token for a principal. The token itself is returned once and never stored. A token
 * issued under an OAuth grant names it, and may expire.
 */
export async function issueToken(
  db: Db,
  principalId: number,
  kind: TokenKind,
  grant?: { id: number; expiresInSeconds: number | null },
): Promise<string> {
  const token = PREFIX + randomBytes(32).toString('base64url');
  const expires =
    grant?.expiresInSeconds == null
      ? null
      : db`now() + make_interval(secs => ${grant.expiresInSeconds})`;
  await db`
    insert into tokens (principal_id, hash, kind, grant_id, expires_at)
    values (${principalId}, ${hashToken(token)}, ${kind}, ${grant?.id ?? null}, ${expires})`;
  return token;
}

/**
 * The principal a token belongs to and its grant, unless the token, its grant or the principal
 * was revoked (for an agent: or its owner), or the token expired. The token's and the grant's
 * last use are noted, at most once a minute (`token list` and the console show them, and callers
 * keep what they found in memory meanwhile): a lookup writes nothing most of the time.
 */
export async function authenticateBearer(db: Db, token: string): Promise<Bearer | undefined> {
  if (!TOKEN.test(token)) return undefined;
  const hash = hashToken(token);
  const [row] = await db<(Principal & GrantColumns)[]>`
    with found as (
      select p.*, t.grant_id, g.client_id as grant_client_id, g.resource as grant_resource,
        t.expires_at as token_expires_at
      from tokens t
      join principals p on p.id = t.principal_id
      left join oauth_grants g on g.id = t.grant_id
      where t.hash = ${hash} and t.revoked_at is null and ${principalHolds(db)}
        and (t.expires_at is null or t.expires_at > now())
        and (t.grant_id is null or g.revoked_at is null)
    ), used as (
      update oauth_grants set last_used_at = now()
      from found
      where oauth_grants.id = found.grant_id
        and (oauth_grants.last_used_at is null or oauth_grants.last_used_at < now() - interval '1 minute')
    ), token_used as (
      update tokens set last_used_at = now()
      where hash = ${hash} and exists (select from found)
        and (last_used_at is null or last_used_at < now() - interval '1 minute')
    )
    select * from found`;
  if (!row) return undefined;
  const { grant_id, grant_client_id, grant_resource, token_expires_at, ...principal } = row;
  return {
    principal,
    grant:
      grant_id === null
        ? null
        : {
            id: Number(grant_id),
            client_id: grant_client_id!,
            resource: grant_resource!,
            expires_at: token_expires_at,
          },
  };
}

/**
 * Whether the principal `p` may act, as an SQL condition: not revoked and, for an agent, its
 * owner not revoked either (an agent acts for its human, who may have been deactivated).
 */
export function principalHolds(db: Db) {
  return db`(p.revoked_at is null and (p.owner is null or exists (
    select 1 from principals o where o.name = p.owner and o.revoked_at is null)))`;
}

interface GrantColumns {
  grant_id: number | null;
  grant_client_id: string | null;
  grant_resource: string | null;
  token_expires_at: Date | null;
}

/** The principal a token belongs to, unless the token or the principal was revoked. */
export async function authenticateToken(db: Db, token: string): Promise<Principal | undefined> {
  return (await authenticateBearer(db, token))?.principal;
}

/**
 * The token with this hash, if it holds (neither it nor its principal revoked, nor an agent's
 * owner): its row's id, and the id of the agent's owner (null for a human's token).
 */
export async function findLiveToken(
  db: Db,
  hash: Buffer,
): Promise<{ id: number; owner_id: number | null } | undefined> {
  const [row] = await db<{ id: number; owner_id: number | null }[]>`
    select t.id, (select o.id from principals o where o.name = p.owner) as owner_id
    from tokens t join principals p on p.id = t.principal_id
    where t.hash = ${hash} and t.revoked_at is null and ${principalHolds(db)}`;
  return row;
}

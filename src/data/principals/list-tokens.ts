import type { Db } from '../../platform/db/open-database.js';
import type { TokenListing } from '../../contract/token.js';
import type { Actor } from '../actor.js';
import { forbidden, notFound } from '../ledger-error.js';
import { assertName } from '../validate.js';

export type { TokenListing } from '../../contract/token.js';

export interface TokenFilter {
  /** Only this human's tokens and their agents' (a human who is not an admin: only their own). */
  human?: string | undefined;
  /** Revoked and expired tokens too (by default, only those that still work). */
  all?: boolean | undefined;
}

/** A human sees their own tokens and their agents'; an admin sees everyone's. */
export function assertMayListTokens(actor: Actor, human?: string): void {
  if (actor.kind !== 'human') throw forbidden('only a human may list or revoke tokens');
  if (human !== undefined && human !== actor.name && !actor.principal.is_admin)
    throw forbidden("only an admin may list another human's tokens");
}

/**
 * The tokens the actor may see, newest first. A token is listed while it works (not revoked,
 * not expired, its principal and for an agent its owner not revoked); `all` lists every one.
 */
export async function listTokens(
  db: Db,
  actor: Actor,
  filter: TokenFilter = {},
): Promise<TokenListing[]> {
  assertMayListTokens(actor, filter.human);
  if (filter.human !== undefined) {
    assertName(filter.human, 'human');
    const [human] =
      await db`select 1 from principals where name = ${filter.human} and kind = 'human'`;
    if (!human) throw notFound(`no human named ${filter.human}`);
  }
  const scope = filter.human ?? (actor.principal!.is_admin ? undefined : actor.name);
  return db<TokenListing[]>`
    ${tokenListing(db)}
    where ${scope === undefined ? db`true` : db`h.name = ${scope}`}
      and ${
        filter.all
          ? db`true`
          : db`t.revoked_at is null and (t.expires_at is null or t.expires_at > now())
               and p.revoked_at is null and h.revoked_at is null`
      }
    order by t.id desc`;
}

/** The select of a token's listing (aliases `t` token, `p` principal, `h` human, `g` grant). */
export function tokenListing(db: Db) {
  return db`
    select t.id, t.kind, p.name as principal, p.kind as principal_kind, h.name as human,
      coalesce(c.metadata ->> 'client_name', g.client_id) as client, t.grant_id,
      t.created_at, t.last_used_at, t.expires_at, t.revoked_at
    from tokens t
    join principals p on p.id = t.principal_id
    join principals h on h.name = coalesce(p.owner, p.name)
    left join oauth_grants g on g.id = t.grant_id
    left join oauth_clients c on c.client_id = g.client_id`;
}

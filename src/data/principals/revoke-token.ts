import type { Db } from '../../platform/db/open-database.js';
import type { Actor } from '../actor.js';
import { conflict, notFound } from '../ledger-error.js';
import { assertMayListTokens, tokenListing, type TokenListing } from './list-tokens.js';

/**
 * Revokes one token, at once in every process (its NOTIFY: migration 0006): the human it belongs
 * to (theirs, or one of their agents') or an admin may. A sign-in's token ends its whole grant —
 * its refresh token would only get a new one — with every other token of that grant.
 */
export async function revokeToken(db: Db, actor: Actor, id: number): Promise<TokenListing> {
  assertMayListTokens(actor);
  const mine = actor.principal!.is_admin ? db`true` : db`h.name = ${actor.name}`;
  const [found] = await db<TokenListing[]>`${tokenListing(db)} where t.id = ${id} and ${mine}`;
  if (!found) throw notFound(`no token #${id} of yours or your agents'`);
  if (found.revoked_at)
    throw conflict(`token #${id} was already revoked at ${found.revoked_at.toISOString()}`);
  const [revoked] = await db<{ revoked_at: Date }[]>`
    with token as (
      update tokens set revoked_at = now() where id = ${id} and revoked_at is null
      returning grant_id, revoked_at
    ), grant_ended as (
      update oauth_grants g set revoked_at = now()
      from token where g.id = token.grant_id and g.revoked_at is null
    ), grant_tokens as (
      update tokens t set revoked_at = now()
      from token where t.grant_id = token.grant_id and t.id <> ${id} and t.revoked_at is null
    )
    select revoked_at from token`;
  if (!revoked) throw conflict(`token #${id} was already revoked`);
  return { ...found, revoked_at: revoked.revoked_at };
}

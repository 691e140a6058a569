import { randomBytes } from 'node:crypto';
import type { Db } from '../../platform/db/open-database.js';
import { hashToken, type Principal } from '../index.js';

/** How long a link from `switchboard open` works: long enough to click, too short to leak usefully. */
export const SIGN_IN_LINK_TTL_SECONDS = 300;
const PREFIX = 'sbl_';
const LINK_TOKEN = /^sbl_[A-Za-z0-9_-]{43}$/;

/** Mints a one-time sign-in link's secret for a human; only its hash is kept. */
export async function mintSignInLink(
  db: Db,
  human: Principal,
): Promise<{ token: string; expiresAt: Date }> {
  const token = PREFIX + randomBytes(32).toString('base64url');
  const [row] = await db<{ expires_at: Date }[]>`
    insert into web_sign_in_links (principal_id, hash, expires_at)
    values (${human.id}, ${hashToken(token)}, now() + make_interval(secs => ${SIGN_IN_LINK_TTL_SECONDS}))
    returning expires_at`;
  return { token, expiresAt: row!.expires_at };
}

/**
 * Uses a link once: marks it used and returns its human, or nothing when it is unknown, used,
 * expired, or its human is gone. One guarded statement, so two tabs racing get one session.
 */
export async function redeemSignInLink(db: Db, token: string): Promise<Principal | undefined> {
  if (!LINK_TOKEN.test(token)) return undefined;
  const [human] = await db<Principal[]>`
    with link as (
      update web_sign_in_links set used_at = now()
      where hash = ${hashToken(token)} and used_at is null and expires_at > now()
      returning principal_id
    )
    select p.* from link join principals p on p.id = link.principal_id
    where p.kind = 'human' and p.revoked_at is null`;
  return human;
}

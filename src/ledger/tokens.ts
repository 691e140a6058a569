import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../db/open-database.js';
import type { Principal } from './actor.js';

const PREFIX = 'sbk_';
const TOKEN = /^sbk_[A-Za-z0-9_-]{43}$/;

/** SHA-256 of the token: what is stored, and what a presented token is looked up by. */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** Mints a token for a principal. The token itself is returned once and never stored. */
export async function issueToken(db: Db, principalId: number): Promise<string> {
  const token = PREFIX + randomBytes(32).toString('base64url');
  await db`insert into tokens (principal_id, hash) values (${principalId}, ${hashToken(token)})`;
  return token;
}

/** The principal a token belongs to, unless the token or the principal was revoked. */
export async function authenticateToken(db: Db, token: string): Promise<Principal | undefined> {
  if (!TOKEN.test(token)) return undefined;
  const [principal] = await db<Principal[]>`
    select p.* from tokens t join principals p on p.id = t.principal_id
    where t.hash = ${hashToken(token)} and t.revoked_at is null and p.revoked_at is null`;
  return principal;
}

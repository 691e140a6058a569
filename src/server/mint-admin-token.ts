import type { Db } from '../platform/db/open-database.js';
import { issueToken, listPrincipals, systemActor, type Principal } from '../data/index.js';

/**
 * A new token for the first admin human (the one the first start created, unless revoked), or
 * undefined when there is no admin. Only code that can reach the database calls this: whoever
 * can read the data directory (or holds DATABASE_URL) may act as its admin anyway.
 */
export async function mintAdminToken(
  db: Db,
  /** Who mints it: `up` (a start saving credentials) or `admin token`. */
  kind: 'up' | 'admin_token',
): Promise<{ admin: Principal; token: string } | undefined> {
  const humans = await listPrincipals(
    db,
    systemActor(kind === 'up' ? 'bootstrap' : 'admin-token'),
    'human',
  );
  const admin = humans.find((human) => human.is_admin && !human.revoked_at);
  if (!admin) return undefined;
  return { admin, token: await issueToken(db, admin.id, kind) };
}

import { randomBytes } from 'node:crypto';
import type { Db } from '../../platform/db/open-database.js';
import { hashToken } from '../../data/index.js';

/** GitHub gives the whole manifest flow an hour; a state outlives it by nothing. */
const STATE_TTL_SECONDS = 3600;
const STATE = /^[A-Za-z0-9_-]{32}$/;

/**
 * A `state` for one visit of the setup page, bound to the console session shown it, for the
 * account (or organization) the page registers the App for. Only its hash is kept; states left
 * unused past their hour go when the next is made.
 */
export async function mintSetupState(
  db: Db,
  webSessionId: number,
  org: string | null,
): Promise<string> {
  const state = randomBytes(24).toString('base64url');
  await db`delete from github_app_setups where expires_at < now()`;
  await db`
    insert into github_app_setups (state_hash, web_session_id, org, expires_at)
    values (${hashToken(state)}, ${webSessionId}, ${org},
            now() + make_interval(secs => ${STATE_TTL_SECONDS}))`;
  return state;
}

/**
 * Takes a state back once: by the session it was made for, within its hour. One statement, so
 * that two callbacks racing with the same state get one App between them.
 */
export async function takeSetupState(
  db: Db,
  state: string,
  webSessionId: number,
): Promise<{ org: string | null } | undefined> {
  if (!STATE.test(state)) return undefined;
  const [row] = await db<{ org: string | null }[]>`
    delete from github_app_setups
    where state_hash = ${hashToken(state)} and web_session_id = ${webSessionId}
      and expires_at > now()
    returning org`;
  return row;
}

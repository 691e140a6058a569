import type { Db } from '../../platform/db/open-database.js';
import type { Principal } from '../actor.js';
import { findHumanByGithubLogin, findHumanById } from '../principals/principals.js';

/**
 * The human a GitHub account signs in as: the one bound to its numeric id, else — the first
 * time — the human an admin added with its login, who is then bound to the id for good (so a
 * later rename, or someone else taking the old login, changes nothing).
 */
export async function findGitHubHuman(
  sql: Db,
  user: { id: number; login: string },
): Promise<Principal | undefined> {
  const [account] = await sql<{ principal_id: number }[]>`
    select principal_id from web_github_accounts where github_user_id = ${user.id}`;
  const bound = account && (await findHumanById(sql, account.principal_id));
  if (bound) return bound;
  const human = await findHumanByGithubLogin(sql, user.login);
  if (!human) return undefined;
  // Only a human not bound yet is bound; one already bound to another id is someone else's.
  const [binding] = await sql`
    insert into web_github_accounts (principal_id, github_user_id) values (${human.id}, ${user.id})
    on conflict do nothing
    returning principal_id`;
  return binding ? human : undefined;
}

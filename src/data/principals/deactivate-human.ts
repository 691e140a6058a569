import type postgres from 'postgres';
import type { Deactivation } from '../../contract/principal.js';
import type { Db } from '../../platform/db/open-database.js';
import type { Actor, Principal } from '../actor.js';
import { conflict, forbidden, notFound } from '../ledger-error.js';
import { insertEvent, todoColumns, type Todo } from '../todos/todo.js';
import { issueToken } from './tokens.js';
import { assertName } from '../validate.js';

export type { Deactivation } from '../../contract/principal.js';

function assertAdmin(actor: Actor, what: string): asserts actor is Actor & { kind: 'human' } {
  if (actor.kind !== 'human' || !actor.principal.is_admin)
    throw forbidden(`only an admin may ${what}`);
}

/**
 * Deactivation and reactivation take turns, so that two admins deactivating each other at once
 * cannot leave no admin.
 */
const lockAdmins = (tx: Db) =>
  tx`select pg_advisory_xact_lock(hashtextextended('switchboard.deactivation', 0))`;

/** The human `name`, locked for the change, or why not. */
async function humanToChange(tx: Db, name: string): Promise<Principal> {
  const [found] = await tx<Principal[]>`select * from principals where name = ${name} for update`;
  if (!found) throw notFound(`no human named ${name}`);
  if (found.kind !== 'human') throw notFound(`no human named ${name} (${name} is an agent)`);
  return found;
}

/**
 * Deactivates a human at once, in every process (an admin does it): they and every agent of
 * theirs are revoked, every token of theirs and their agents' too, their sign-ins (OAuth grants)
 * and console sessions end — each change NOTIFYs `<schema>.revocations` (migrations 0006, 0024,
 * 0031), which ends their streams and MCP sessions in every process. Their pending approvals go
 * to their backup when one is set and active, else to the admins (no assignee), each history
 * saying so; their other todos stay as they are, attributed as before. The last active admin is
 * not deactivated.
 */
export async function deactivateHuman(
  sql: postgres.Sql,
  actor: Actor,
  name: string,
): Promise<Deactivation & { wakeId: string }> {
  assertAdmin(actor, 'deactivate humans');
  assertName(name);
  return sql.begin(async (tx) => {
    await lockAdmins(tx);
    const found = await humanToChange(tx, name);
    if (found.revoked_at)
      throw conflict(`${name} is already deactivated (since ${found.revoked_at.toISOString()})`);
    if (found.is_admin) {
      const [other] = await tx`
        select 1 from principals
        where kind = 'human' and is_admin and revoked_at is null and id <> ${found.id}
        limit 1`;
      if (!other)
        throw conflict(
          `${name} is the last admin: make another human an admin first, then deactivate ${name}`,
        );
    }
    const [backup] = await tx<{ name: string }[]>`
      select b.name from human_settings s join principals b on b.id = s.backup_id
      where s.principal_id = ${found.id} and b.revoked_at is null`;

    const revoked = await tx<Principal[]>`
      update principals set revoked_at = now()
      where (id = ${found.id} or (owner = ${name} and kind = 'agent')) and revoked_at is null
      returning *`;
    const theirs = tx`(select id from principals where id = ${found.id} or owner = ${name})`;
    const [{ tokens, grants, sessions, wake_id: wakeId }] = await tx<
      [{ tokens: number; grants: number; sessions: number; wake_id: string }]
    >`
      with tokens as (
        update tokens set revoked_at = now()
        where principal_id in ${theirs} and revoked_at is null
        returning 1
      ), grants as (
        update oauth_grants set revoked_at = now()
        where (principal_id in ${theirs} or granted_by = ${found.id}) and revoked_at is null
        returning 1
      ), sessions as (
        delete from web_sessions where principal_id = ${found.id} returning 1
      ), links as (
        delete from web_sign_in_links where principal_id = ${found.id} and used_at is null
      )
      select (select count(*)::int from tokens) as tokens, (select count(*)::int from grants) as grants,
        (select count(*)::int from sessions) as sessions,
        -- names the wakes of the approvals it reassigns, announced after the commit
        pg_current_xact_id()::text as wake_id`;
    const approvals = await reassignApprovals(tx, actor, name, backup?.name ?? null);
    return {
      human: revoked.find((principal) => principal.id === found.id)!,
      agents: revoked.filter((principal) => principal.kind === 'agent').map((agent) => agent.name),
      tokens_revoked: tokens,
      sign_ins_revoked: grants,
      sessions_ended: sessions,
      approvals,
      wakeId,
    };
  });
}

/** A deactivated human's pending approvals go to `to` (null: the admins), each history saying so. */
async function reassignApprovals(
  tx: Db,
  actor: Actor,
  from: string,
  to: string | null,
): Promise<Todo[]> {
  return tx<Todo[]>`
    with t as (
      update todos t set assignee = ${to}, updated_at = now()
      where t.kind = 'approval' and t.state = 'pending' and t.assignee = ${from}
        and t.expires_at > now()
      returning t.*
    ), e as (${insertEvent(tx, actor, 'reassigned', {
      from,
      to,
      reason:
        to === null
          ? `${from} was deactivated, with no backup: the admins decide`
          : `${from} was deactivated; ${to} is their backup`,
    })})
    select ${todoColumns(tx)} from t
    order by t.id`;
}

/**
 * Lets a deactivated human in again (an admin does it), with a new token, shown once: what
 * deactivation revoked stays revoked — their old tokens, sign-ins and sessions, and their agents —
 * and their approvals stay where they went.
 */
export async function reactivateHuman(
  sql: postgres.Sql,
  actor: Actor,
  name: string,
): Promise<{ human: Principal; token: string }> {
  assertAdmin(actor, 'reactivate humans');
  assertName(name);
  return sql.begin(async (tx) => {
    await lockAdmins(tx);
    const found = await humanToChange(tx, name);
    if (!found.revoked_at) throw conflict(`${name} is active: there is nothing to reactivate`);
    const [human] = await tx<Principal[]>`
      update principals set revoked_at = null where id = ${found.id} returning *`;
    return { human: human!, token: await issueToken(tx, found.id, 'human_reactivate') };
  });
}

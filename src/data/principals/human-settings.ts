import type { HumanDetails } from '../../contract/principal.js';
import type { Db } from '../../platform/db/open-database.js';
import type { Actor, Principal } from '../actor.js';
import { forbidden, invalid, notFound } from '../ledger-error.js';
import { assertName } from '../validate.js';

export type { HumanDetails } from '../../contract/principal.js';

/**
 * What a human may set of their own (an admin: of anyone's). A field left out is kept; `null`
 * clears it.
 */
export interface HumanSettingsChange {
  /** Who takes their pending approvals when they are deactivated (another, active human). */
  backup?: string | null | undefined;
}

/** A human changes their own settings; an admin, anyone's. */
export function assertMaySetHuman(actor: Actor, name: string): void {
  if (actor.kind !== 'human') throw forbidden("only a human may change a human's settings");
  if (name !== actor.name && !actor.principal.is_admin)
    throw forbidden("only an admin may change another human's settings");
}

/** A human and their settings: an admin sees anyone, a human themself, as `human list` does. */
export async function showHuman(db: Db, actor: Actor, name: string): Promise<HumanDetails> {
  if (actor.kind !== 'human') throw forbidden('only a human may see a human');
  assertName(name);
  const [human] = await db<(Principal & { backup: string | null; backup_for: string[] })[]>`
    select p.*, b.name as backup,
      array(select o.name from human_settings os join principals o on o.id = os.principal_id
            where os.backup_id = p.id order by o.name) as backup_for
    from principals p
    left join human_settings s on s.principal_id = p.id
    left join principals b on b.id = s.backup_id
    where p.name = ${name} and p.kind = 'human'`;
  if (!human || (human.name !== actor.name && !actor.principal.is_admin))
    throw notFound(`no human named ${name}`);
  const agents = await db<HumanDetails['agents']>`
    select name, queues, created_at, revoked_at from principals
    where owner = ${name} and kind = 'agent'
    order by id`;
  return { ...human, agents };
}

/** Changes a human's settings (see HumanSettingsChange); returns them as showHuman does. */
export async function setHumanSettings(
  db: Db,
  actor: Actor,
  name: string,
  change: HumanSettingsChange,
): Promise<HumanDetails> {
  assertMaySetHuman(actor, name);
  assertName(name);
  const [human] = await db<Principal[]>`
    select * from principals where name = ${name} and kind = 'human'`;
  if (!human) throw notFound(`no human named ${name}`);
  if (change.backup !== undefined) {
    const backupId = change.backup === null ? null : await activeBackup(db, name, change.backup);
    await db`
      insert into human_settings (principal_id, backup_id) values (${human.id}, ${backupId})
      on conflict (principal_id) do update set backup_id = excluded.backup_id, updated_at = now()`;
  }
  return showHuman(db, actor, name);
}

/** The id of the human `backup` names, who must be another human and active. */
async function activeBackup(db: Db, name: string, backup: string): Promise<number> {
  assertName(backup, 'backup');
  if (backup === name) throw invalid(`${name} cannot be their own backup`);
  const [found] = await db<Principal[]>`
    select * from principals where name = ${backup} and kind = 'human'`;
  if (!found) throw invalid(`no human named ${backup}`);
  if (found.revoked_at) throw invalid(`${backup} is deactivated: choose an active human`);
  return found.id;
}

import type { Db } from '../../platform/db/open-database.js';
import { systemActor } from '../actor.js';
import { insertEvent } from './todo.js';

const DISPATCHER = systemActor('dispatcher', 'delivery');

/**
 * Cancels the approvals still waiting that were asked from consumer sessions which went away.
 * Claude Code never says that a permission prompt was answered in the terminal, so when the
 * asking session is gone nobody is waiting for the verdict any more.
 */
export async function cancelSessionApprovals(db: Db, sessionIds: string[]): Promise<number[]> {
  if (sessionIds.length === 0) return [];
  const canceled = await db<{ id: number }[]>`
    with t as (
      update todos t set state = 'canceled', updated_at = now(), summary = 'the asking session went away'
      where t.kind = 'approval' and t.state = 'pending' and t.meta->>'channel_session' = any(${sessionIds}::text[])
      returning t.*
    ), e as (${insertEvent(db, DISPATCHER, 'expired', { reason: 'the asking session went away' })})
    select t.id from t`;
  return canceled.map((row) => row.id);
}

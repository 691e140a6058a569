import type postgres from 'postgres';
import { excerpt } from '../contract/neutralise-text.js';
import type { Db } from '../db/open-database.js';
import { displayId, type Actor, type Todo } from '../ledger/index.js';
import type { SourceTodoMeta } from './decide-source-delivery.js';
import { SOURCE_KINDS } from './source-kinds.js';

/** GitLab caps notes at a million characters, Gitea at far more; the outbox holds 65,536. */
const COMMENT_MAX = 65_536;

export interface SourceOutboxRow {
  id: number;
  todo_id: number;
  source: string;
  target: Record<string, unknown>;
  body: string;
  attempts: number;
}

/** The source details of a todo a source made, or null for any other todo. */
export function sourceMetaOf(todo: Todo): SourceTodoMeta | null {
  if (!(SOURCE_KINDS as readonly string[]).includes(todo.source)) return null;
  // Written by the intake itself, so trusted as it stands.
  return (todo.meta.source as SourceTodoMeta | undefined) ?? null;
}

/**
 * Queues a comment on the issue or merge request a source's todo came from, in the caller's
 * transaction — only when the source (still) has an API token to post it with; else nothing.
 */
async function enqueueSourceComment(
  db: Db,
  todo: Todo,
  text: string,
  footer: string,
): Promise<void> {
  const meta = sourceMetaOf(todo);
  if (!meta?.target) return;
  await db`
    insert into outbox (todo_id, source, kind, write_back, target, body)
    select ${todo.id}, name, kind::text, 'comment', ${db.json(meta.target as never)},
           ${excerpt(text, COMMENT_MAX - footer.length) + footer}
    from sources where name = ${meta.name} and api_token is not null`;
}

/** A reply on a source's todo goes back to its issue or merge request, saying who wrote it. */
export async function queueSourceReply(
  tx: postgres.TransactionSql,
  todo: Todo,
  text: string,
  actor: Actor,
): Promise<void> {
  const footer = `\n\n— reply from ${actor.name} (${actor.kind}) on switchboard todo ${displayId(todo.id)}`;
  await enqueueSourceComment(tx, todo, text, footer);
}

/** A todo someone asked for in a comment, completed with a summary: the summary goes back. */
export async function queueSourceSummary(
  tx: postgres.TransactionSql,
  todo: Todo,
  actor: Actor,
): Promise<void> {
  if (sourceMetaOf(todo)?.rule !== 'comment' || !todo.summary) return;
  const footer = `\n\n— switchboard todo ${displayId(todo.id)}, completed by ${actor.name}`;
  await enqueueSourceComment(tx, todo, todo.summary, footer);
}

/** The next due comment, held for one attempt (as github_outbox's rows are: see there). */
export async function claimDueSourceComment(
  sql: postgres.Sql,
  leaseMs: number,
): Promise<SourceOutboxRow | undefined> {
  const [row] = await sql<SourceOutboxRow[]>`
    with due as (
      select id from outbox
      where source <> 'github' and state = 'pending' and next_attempt_at <= now()
      order by next_attempt_at, id
      limit 1
      for update skip locked
    )
    update outbox o set attempts = o.attempts + 1,
                        next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000})
    from due where o.id = due.id
    returning o.id, o.todo_id, o.source, o.target, o.body, o.attempts`;
  return row;
}

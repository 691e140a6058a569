import type { Db } from '../db/open-database.js';
import { getTodo } from './get-todo.js';
import { humanBehind, type Actor } from './actor.js';
import { forbidden, invalid } from './ledger-error.js';
import { neutraliseLine, neutraliseText } from '../contract/neutralise-text.js';
import { insertEvent, todoColumns, type Todo, type TodoSource } from './todo.js';
import { assertStorable } from './validate.js';

export const APPROVAL_QUEUE = 'approvals';
export const APPROVAL_TTL_DEFAULT_SECONDS = 900;
export const APPROVAL_TTL_MAX_SECONDS = 7 * 86_400;

export interface ApprovalRequest {
  /** What the human is asked, one line. */
  question: string;
  body?: string | null | undefined;
  /** Claude Code's permission request id, when the prompt was relayed from a session. */
  request_id?: string | null | undefined;
  /** The todo the question is about, if any; it must be visible to the asker. */
  about_todo_id?: number | null | undefined;
  ttl_seconds?: number | undefined;
  source: TodoSource;
  meta?: Record<string, unknown> | undefined;
}

/**
 * An approval todo asks a human to decide. An agent's question goes to the human who owns the
 * agent; a human may ask themself (a reminder that needs a verdict).
 */
export async function requestApproval(db: Db, actor: Actor, input: ApprovalRequest): Promise<Todo> {
  if (actor.kind === 'system') throw forbidden('approvals are requested by an agent or a human');
  const owner = humanBehind(actor)!;
  const ttl = input.ttl_seconds ?? APPROVAL_TTL_DEFAULT_SECONDS;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > APPROVAL_TTL_MAX_SECONDS) {
    throw invalid(`ttl_seconds must be a whole number from 1 to ${APPROVAL_TTL_MAX_SECONDS}`);
  }
  if (input.request_id != null && !/^[a-km-z]{5}$/.test(input.request_id)) {
    throw invalid('request_id must be five lowercase letters a-z without l');
  }
  const title = neutraliseLine(input.question);
  if (title === '') throw invalid('question is empty');
  assertStorable({ meta: input.meta });
  if (input.about_todo_id != null) await getTodo(db, actor, input.about_todo_id);

  const [todo] = await db<Todo[]>`
    with t as (
      insert into todos (queue, kind, title, body, state, source, attributed_to, assignee, requested_by,
                         request_id, about_todo_id, expires_at, meta)
      values (${APPROVAL_QUEUE}, 'approval', ${title}, ${input.body == null ? null : neutraliseText(input.body)},
              'pending', ${input.source}, ${owner}, ${owner}, ${actor.name}, ${input.request_id ?? null},
              ${input.about_todo_id ?? null}, now() + make_interval(secs => ${ttl}),
              ${db.json((input.meta ?? {}) as never)})
      returning *
    ), e as (${insertEvent(db, actor, 'approval_requested', input.request_id ? { request_id: input.request_id } : null)})
    select ${todoColumns(db)} from t`;
  return todo!;
}

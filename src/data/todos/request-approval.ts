import type { Db } from '../../platform/db/open-database.js';
import { humanBehind, visibleTo, type Actor } from '../actor.js';
import { forbidden, invalid, notFound } from '../ledger-error.js';
import { neutraliseLine, neutraliseText } from '../../contract/neutralise-text.js';
import { displayId, insertEvent, todoColumns, type Todo, type TodoSource } from './todo.js';
import { assertStorable } from '../validate.js';
import { secretsInsert, withheldData, withholderFor, type SecretOptions } from './todo-secrets.js';

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
export async function requestApproval(
  db: Db,
  actor: Actor,
  input: ApprovalRequest,
  options: SecretOptions = {},
): Promise<Todo> {
  if (actor.kind === 'system') throw forbidden('approvals are requested by an agent or a human');
  const owner = humanBehind(actor)!;
  const ttl = input.ttl_seconds ?? APPROVAL_TTL_DEFAULT_SECONDS;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > APPROVAL_TTL_MAX_SECONDS) {
    throw invalid(`ttl_seconds must be a whole number from 1 to ${APPROVAL_TTL_MAX_SECONDS}`);
  }
  if (input.request_id != null && !/^[a-km-z]{5}$/.test(input.request_id)) {
    throw invalid('request_id must be five lowercase letters a-z without l');
  }
  // A permission prompt's input (a command line, a file) may carry a credential: withheld.
  const withholder = withholderFor(options);
  const [question, given] = withholder.withholdAll([input.question, input.body ?? '']);
  const title = neutraliseLine(question!);
  if (title === '') throw invalid('question is empty');
  const body = input.body == null ? null : neutraliseText(given!);
  const data = {
    ...(input.request_id ? { request_id: input.request_id } : {}),
    ...withheldData(withholder),
  };
  assertStorable({ meta: input.meta });
  const about = input.about_todo_id ?? null;

  // The todo it is about is checked in the insert itself: one the asker cannot see is missing.
  const [todo] = await db<Todo[]>`
    with t as (
      insert into todos (queue, kind, title, body, state, source, attributed_to, assignee, requested_by,
                         request_id, about_todo_id, expires_at, meta)
      select ${APPROVAL_QUEUE}, 'approval', ${title}, ${body},
             'pending', ${input.source}, ${owner}, ${owner}, ${actor.name}, ${input.request_id ?? null},
             ${about}::bigint, now() + make_interval(secs => ${ttl}), ${db.json((input.meta ?? {}) as never)}
      where ${about === null ? db`true` : db`exists (select 1 from todos t where t.id = ${about} and ${visibleTo(db, actor)})`}
      returning *
    ), e as (${insertEvent(db, actor, 'approval_requested', Object.keys(data).length ? data : null)})${secretsInsert(db, withholder, options)}
    select ${todoColumns(db)} from t`;
  if (!todo) throw notFound(`todo ${displayId(about!)} not found`);
  return todo;
}

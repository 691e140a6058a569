import type postgres from 'postgres';
import type { Db } from '../../platform/db/open-database.js';
import { assertMayWorkQueue, humanBehind, visibleTo, type Actor } from '../actor.js';
import { conflict, forbidden, invalid } from '../ledger-error.js';
import { findPrincipal } from '../principals/principals.js';
import { neutraliseLine, neutraliseText } from '../../contract/neutralise-text.js';
import { insertEvent, todoColumns, type Todo, type TodoSource } from './todo.js';
import { secretsInsert, withheldData, withholderFor, type SecretOptions } from './todo-secrets.js';
import {
  assertKind,
  assertName,
  assertQueue,
  assertStorable,
  translateConstraintErrors,
} from '../validate.js';

export interface NewTodo {
  queue: string;
  title: string;
  body?: string | null | undefined;
  kind?: string | undefined;
  /** Idempotency key: a second create with the same key on the same queue, while the first is live, returns the first. */
  key?: string | null | undefined;
  assignee?: string | null | undefined;
  url?: string | null | undefined;
  max_attempts?: number | undefined;
  meta?: Record<string, unknown> | undefined;
  source: TodoSource;
  /** System actors only (provider adapters): the verified human behind the event. */
  attributed_to?: string | undefined;
  /** System actors only: an untrusted sender's event waits for a human before anyone can claim it. */
  quarantined?: boolean | undefined;
  /**
   * Why it is quarantined, for the human who decides (`todo show`, `quarantine list`): kept in
   * the `quarantined` history event as `{reason}`. Ignored for a todo that is not quarantined.
   */
  quarantine_reason?: string | undefined;
}

export interface CreatedTodo {
  todo: Todo;
  /** False when an idempotency key matched a live todo, which is returned instead. */
  created: boolean;
  /**
   * A created todo's: the id of the transaction that wrote it, which names its wake
   * (src/contract/wake.ts) for a writer that announces it after the commit.
   */
  wakeId?: string;
}

/** The todo is live while it waits, is worked, or has attempts left; only then does its key hold. */
const LIVE_KEY = `idempotency_key is not null
  and (state in ('pending', 'claimed', 'quarantined') or (state = 'failed' and available_at is not null))`;

export interface CreateOptions extends SecretOptions {
  /**
   * The caller announces the new todo's wake itself once its transaction has committed
   * (src/wakes/wake-notifier.ts), so that this commit does not NOTIFY: notifying commits
   * are serialised database-wide (migrations/0012). Only for a `created` todo that is pending.
   */
  announceWake?: boolean;
}

export async function createTodo(
  db: Db,
  actor: Actor,
  input: NewTodo,
  options: CreateOptions = {},
): Promise<CreatedTodo> {
  const todo = await prepareTodo(db, actor, input, options);
  // An insert that meets a live key does nothing; the live todo is then read in a new statement
  // (whose snapshot sees the conflicting row once its transaction committed). If that todo
  // finished in between, the key is free again: go round once more.
  for (let round = 0; round < 5; round++) {
    const [created] = await translateConstraintErrors(
      () => db<(Todo & { wake_id: string })[]>`
        with ${todo.insert()} select ${todoColumns(db)}, pg_current_xact_id()::text as wake_id from t`,
    );
    if (created) {
      const { wake_id: wakeId, ...made } = created;
      return { todo: made, created: true, wakeId };
    }
    const [existing] = await db<(Todo & { visible: boolean })[]>`
      select ${todoColumns(db)}, ${visibleTo(db, actor)} as visible
      from todos t where queue = ${input.queue} and ${db.unsafe(LIVE_KEY)} and idempotency_key = ${todo.key}`;
    if (existing) {
      const { visible, ...found } = existing;
      if (!visible) throw conflict(`key ${todo.key} is in use on queue ${input.queue}`);
      return { todo: found, created: false };
    }
  }
  throw new Error(`idempotency key ${todo.key} kept changing hands`);
}

export interface PreparedTodo {
  /**
   * The todo's insert and its first history row, as the CTEs `t` (the new todo: none when its
   * key is live, or `when` is false) and `e`, for a statement that writes rows of its own with it.
   */
  insert(when?: postgres.Fragment): postgres.Fragment;
  key: string | null;
}

/**
 * A new todo, checked as createTodo checks it (its assignee included, which is read), ready to
 * be inserted in a statement of the caller's: the intake records a delivery, its todo and what
 * goes with it in one (src/intake/claim-delivery-id.ts). createTodo is the rest: what to do
 * when the key is live.
 */
export async function prepareTodo(
  db: Db,
  actor: Actor,
  input: NewTodo,
  options: CreateOptions = {},
): Promise<PreparedTodo> {
  const { announceWake = false } = options;
  assertQueue(input.queue);
  const kind = input.kind ?? 'manual';
  assertKind(kind);
  if (kind === 'approval') throw invalid('approvals are created with request_approval, not create');
  assertMayWorkQueue(actor, input.queue);
  if (
    actor.kind !== 'system' &&
    (input.attributed_to !== undefined || input.quarantined || input.quarantine_reason)
  ) {
    throw forbidden('only switchboard itself sets attribution or quarantine');
  }
  const attributedTo = actor.kind === 'system' ? input.attributed_to : humanBehind(actor);
  if (!attributedTo) throw invalid('a todo must be attributed to a human');
  const quarantined = input.quarantined === true;
  const { withholder, title, body, reason } = cleanTexts(input, quarantined, options);
  if (title === '') throw invalid('title is empty');
  const key = input.key ?? null;
  if (key !== null && (key.length === 0 || key.length > 200))
    throw invalid('key must be 1 to 200 characters');
  if (
    input.max_attempts !== undefined &&
    !(Number.isInteger(input.max_attempts) && input.max_attempts >= 1 && input.max_attempts <= 100)
  ) {
    throw invalid('max_attempts must be a whole number from 1 to 100');
  }
  assertStorable({ key, url: input.url, meta: input.meta });
  const data = { ...(reason === null ? {} : { reason }), ...withheldData(withholder) };
  if (input.assignee != null) {
    assertName(input.assignee, 'assignee');
    await assertAssignable(db, input.assignee, input.queue);
  }
  return {
    key,
    insert: (when = db`true`) => db`
      t as (
        insert into todos (queue, kind, title, body, state, source, url, attributed_to, assignee,
                           idempotency_key, available_at, max_attempts, meta)
        select ${input.queue}, ${kind}, ${title}, ${body}, ${quarantined ? 'quarantined' : 'pending'},
               ${input.source}, ${input.url ?? null}, ${attributedTo}, ${input.assignee ?? null}, ${key},
               ${quarantined ? null : db`now()`}, ${input.max_attempts ?? 5},
               ${db.json((input.meta ?? {}) as never)}
        -- evaluated before the insert's triggers fire, at the end of this statement
        ${announceWake ? db`from (select set_config('switchboard.announce_new_todos', 'on', true)) announce` : db``}
        where ${when}
        on conflict (queue, idempotency_key) where ${db.unsafe(LIVE_KEY)} do nothing
        returning *
      ), e as (${insertEvent(db, actor, quarantined ? 'quarantined' : 'created', Object.keys(data).length ? data : null)})${secretsInsert(db, withholder, options)}`,
  };
}

/**
 * A new todo's texts as they are kept: their credentials withheld, from the text as written
 * (before it is cut to size: a cut must not leave half of one behind, unrecognisable), then
 * neutralised. A quarantine reason is provider text, and a released todo's history reaches
 * agents: one clean line too.
 */
function cleanTexts(input: NewTodo, quarantined: boolean, options: SecretOptions) {
  const withholder = withholderFor(options);
  const given = quarantined && input.quarantine_reason ? input.quarantine_reason : null;
  const [title, body, reason] = withholder.withholdAll([
    input.title,
    input.body ?? '',
    given ?? '',
  ]);
  return {
    withholder,
    title: neutraliseLine(title!),
    body: input.body == null ? null : neutraliseText(body!),
    reason: given === null ? null : neutraliseLine(reason!, 500),
  };
}

async function assertAssignable(db: Db, name: string, queue: string): Promise<void> {
  const assignee = await findPrincipal(db, name);
  if (!assignee || assignee.revoked_at) throw invalid(`no principal named ${name}`);
  if (assignee.kind === 'agent' && !assignee.queues?.includes(queue)) {
    throw invalid(`agent ${name} does not work queue ${queue}, so it could never claim this todo`);
  }
}

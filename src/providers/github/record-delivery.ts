import type postgres from 'postgres';
import {
  createTodo,
  displayId,
  LedgerError,
  systemActor,
  type NewTodo,
  type Todo,
} from '../../ledger/index.js';
import { findReplay } from '../find-replay.js';
import { decideByComment } from './decide-by-comment.js';
import { enqueueWriteBack, type WriteBack } from './enqueue-write-back.js';
import type { DeliveryFacts } from './read-delivery-facts.js';
import type { VerdictCommand } from './read-verdict-command.js';
import { TimeoutError } from './with-timeout.js';

export type Disposition =
  | 'created'
  | 'quarantined'
  | 'no_rule'
  | 'bot_sender'
  | 'unreadable'
  | 'duplicate'
  | 'verdict'
  | 'verdict_refused';

export interface DeliveryDecision {
  facts: DeliveryFacts;
  disposition: Exclude<Disposition, 'duplicate' | 'verdict_refused'>;
  notes: string[];
  /** verdict only: the `/approve N` or `/deny N` comment to carry out. */
  verdict?: VerdictCommand;
  /** created and quarantined only: the todo, and the write-backs to queue once it has an id. */
  todo?: {
    input: NewTodo;
    writeBacks: Omit<WriteBack, 'todoId'>[];
  };
}

export interface RecordedDelivery {
  disposition: Disposition;
  todoId: number | null;
  /** Whether the todo's write-backs were queued (a new todo, not one found by its key). */
  queuedWriteBacks: boolean;
  note: string | null;
}

const GITHUB = systemActor('github');
const NOTE_MAX = 1000;

export interface RecordOptions {
  /** Nothing is written once this has passed. */
  deadline: number;
  /** What the rules read (read-rule-fields.ts), kept as the delivery's facts. */
  fields: Record<string, unknown>;
  bodySha256: Buffer;
  replayWindowMs: number;
  /** Announces a new todo's wake once the delivery has committed (src/delivery/wake-notifier.ts). */
  announce?: ((todos: Todo[]) => void) | undefined;
}

/**
 * One transaction: the delivery row (which claims the delivery id), the todo, its write-backs.
 * A redelivery finds the id taken — at once, or after waiting for the first to commit — and is
 * recorded as a `duplicate` receipt that makes nothing; so is a replay, the same signed body
 * under another delivery id (findReplay). Nothing is written once `deadline` has passed: a
 * caller that stopped waiting must not have its delivery commit behind its back.
 */
export async function recordDelivery(
  sql: postgres.Sql,
  decision: DeliveryDecision,
  { deadline, fields, bodySha256, replayWindowMs, announce }: RecordOptions,
): Promise<RecordedDelivery> {
  const { facts } = decision;
  const notes = [...decision.notes];
  const row = {
    source: 'github',
    kind: 'github',
    delivery_id: facts.deliveryId,
    event: facts.event,
    action: facts.action,
    subject: facts.repository?.fullName ?? null,
    actor: facts.sender?.login ?? null,
    installation_id: facts.installationId,
    body_sha256: bodySha256,
    facts: sql.json({
      event: facts.event,
      action: facts.action,
      repository: facts.repository,
      sender: facts.sender,
      installation_id: facts.installationId,
      fields,
    } as never),
  };
  const note = () => (notes.length ? notes.join('; ').slice(0, NOTE_MAX) : null);
  const wakeOptions = { announceWake: announce !== undefined };
  const assertInTime = () => {
    if (Date.now() >= deadline) throw new TimeoutError('the delivery deadline passed');
  };

  let made: Todo | undefined;
  const recorded = await sql.begin(async (tx): Promise<RecordedDelivery> => {
    assertInTime();
    // The database gives up on its own too, rather than hold a lock for a caller long gone.
    // Both statements go out together (postgres.js pipelines a transaction's queries): every
    // round trip counts when GitHub is waiting.
    const [, replayOf] = await Promise.all([
      tx`select set_config('statement_timeout', ${String(Math.max(1, deadline - Date.now()))}, true)`,
      findReplay(tx, {
        source: 'github',
        deliveryId: facts.deliveryId,
        bodySha256,
        windowMs: replayWindowMs,
      }),
    ]);
    if (replayOf) {
      const replayNote = `a replay of delivery ${replayOf} (the same signed body under another delivery id)`;
      await tx`insert into deliveries ${tx({ ...row, disposition: 'duplicate', note: replayNote })}`;
      assertInTime();
      return { disposition: 'duplicate', todoId: null, queuedWriteBacks: false, note: replayNote };
    }
    const [claimed] = await tx<{ id: number }[]>`
        insert into deliveries ${tx({ ...row, disposition: decision.disposition, note: note() })}
        on conflict (source, delivery_id) where disposition not in ('duplicate', 'unreadable') do nothing
        returning id`;
    if (!claimed) {
      await tx`insert into deliveries ${tx({ ...row, disposition: 'duplicate', note: null })}`;
      assertInTime();
      return { disposition: 'duplicate', todoId: null, queuedWriteBacks: false, note: null };
    }
    if (decision.verdict) {
      const outcome = await decideByComment(tx, facts, decision.verdict);
      notes.push(outcome.note);
      const disposition = outcome.decided ? 'verdict' : 'verdict_refused';
      await tx`update deliveries set disposition = ${disposition}, note = ${note()} where id = ${claimed.id}`;
      assertInTime();
      return { disposition, todoId: null, queuedWriteBacks: false, note: note() };
    }
    if (!decision.todo) {
      assertInTime();
      return {
        disposition: decision.disposition,
        todoId: null,
        queuedWriteBacks: false,
        note: note(),
      };
    }

    const { input, writeBacks } = decision.todo;
    let created: Awaited<ReturnType<typeof createTodo>>;
    try {
      created = await createTodo(tx, GITHUB, input, wakeOptions);
    } catch (error) {
      // An assignee that does not exist (or cannot work the queue) is dropped, never fatal: the
      // check runs before anything is written, so the transaction is still good.
      if (!(error instanceof LedgerError && error.code === 'invalid' && input.assignee))
        throw error;
      created = await createTodo(tx, GITHUB, { ...input, assignee: null }, wakeOptions);
      notes.push(`assignee ${input.assignee} dropped: ${error.message}`);
    }
    const { todo } = created;
    if (created.created) {
      made = todo;
      for (const writeBack of writeBacks)
        await enqueueWriteBack(tx, { ...writeBack, todoId: todo.id });
    } else {
      notes.push(
        `todo ${displayId(todo.id)} already existed for this delivery (same idempotency key)`,
      );
    }
    await tx`update deliveries set todo_id = ${todo.id}, note = ${note()} where id = ${claimed.id}`;
    assertInTime();
    return {
      disposition: decision.disposition,
      todoId: todo.id,
      queuedWriteBacks: created.created && writeBacks.length > 0,
      note: note(),
    };
  });
  // Committed: the new todo's wake may go out now.
  if (made) announce?.([made]);
  return recorded;
}

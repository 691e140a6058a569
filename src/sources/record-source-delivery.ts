import type postgres from 'postgres';
import { createTodo, displayId, LedgerError, systemActor } from '../ledger/index.js';
import { findReplay } from '../providers/find-replay.js';
import { TimeoutError } from '../providers/github/with-timeout.js';
import type { SourceDecision } from './decide-source-delivery.js';
import type { SourceFacts } from './source-provider.js';

export interface RecordedSourceDelivery {
  /** The row's id: `deliveries show ID`. */
  id: number;
  disposition: SourceDecision['disposition'] | 'duplicate';
  todoId: number | null;
  note: string | null;
}

const NOTE_MAX = 1000;

/**
 * One transaction, as for GitHub: the delivery row (which claims the source's delivery id), then
 * its todo. A redelivery under the same id, or the same signed body under another id within the
 * replay window, is recorded `duplicate` and makes nothing. Nothing is written past `deadline`.
 */
export async function recordSourceDelivery(
  sql: postgres.Sql,
  delivery: {
    source: string;
    kind: string;
    deliveryId: string;
    facts: SourceFacts;
    bodySha256: Buffer;
    decision: SourceDecision;
  },
  { deadline, replayWindowMs }: { deadline: number; replayWindowMs: number },
): Promise<RecordedSourceDelivery> {
  const { facts, decision } = delivery;
  const notes = [...decision.notes];
  const note = () => (notes.length ? notes.join('; ').slice(0, NOTE_MAX) : null);
  const row = {
    source: delivery.source,
    kind: delivery.kind,
    delivery_id: delivery.deliveryId,
    event: facts.event,
    action: facts.action,
    subject: facts.subject?.slice(0, 300) ?? null,
    actor: facts.actor?.login.slice(0, 200) ?? null,
    facts: sql.json(facts as never),
    body_sha256: delivery.bodySha256,
  };
  const assertInTime = () => {
    if (Date.now() >= deadline) throw new TimeoutError('the delivery deadline passed');
  };
  const system = systemActor(delivery.kind, delivery.source);

  return sql.begin(async (tx) => {
    assertInTime();
    const [, replayOf] = await Promise.all([
      tx`select set_config('statement_timeout', ${String(Math.max(1, deadline - Date.now()))}, true)`,
      findReplay(tx, {
        source: delivery.source,
        deliveryId: delivery.deliveryId,
        bodySha256: delivery.bodySha256,
        windowMs: replayWindowMs,
      }),
    ]);
    const duplicate = async (why: string | null) => {
      const [{ id }] = await tx<[{ id: number }]>`
        insert into deliveries ${tx({ ...row, disposition: 'duplicate', note: why })} returning id`;
      assertInTime();
      return { id, disposition: 'duplicate' as const, todoId: null, note: why };
    };
    if (replayOf) {
      return duplicate(
        `a replay of delivery ${replayOf} (the same signed body under another delivery id)`,
      );
    }
    const [claimed] = await tx<{ id: number }[]>`
      insert into deliveries ${tx({ ...row, disposition: decision.disposition, note: note() })}
      on conflict (source, delivery_id) where disposition not in ('duplicate', 'unreadable')
      do nothing
      returning id`;
    if (!claimed) return duplicate(null);
    if (!decision.todo) {
      assertInTime();
      return { id: claimed.id, disposition: decision.disposition, todoId: null, note: note() };
    }
    const { input } = decision.todo;
    let created: Awaited<ReturnType<typeof createTodo>>;
    try {
      created = await createTodo(tx, system, input);
    } catch (error) {
      // As for GitHub: an assignee that does not exist (or cannot work the queue) is dropped.
      if (!(error instanceof LedgerError && error.code === 'invalid' && input.assignee))
        throw error;
      created = await createTodo(tx, system, { ...input, assignee: null });
      notes.push(`assignee ${input.assignee} dropped: ${error.message}`);
    }
    if (!created.created) {
      notes.push(
        `todo ${displayId(created.todo.id)} already existed for this (same idempotency key)`,
      );
    }
    await tx`update deliveries set todo_id = ${created.todo.id}, note = ${note()} where id = ${claimed.id}`;
    assertInTime();
    return {
      id: claimed.id,
      disposition: decision.disposition,
      todoId: created.todo.id,
      note: note(),
    };
  });
}

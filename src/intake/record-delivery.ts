import type postgres from 'postgres';
import {
  displayId,
  LedgerError,
  systemActor,
  translateConstraintErrors,
  type NewTodo,
  type PreparedTodo,
  type Todo,
} from '../data/index.js';
import type { TodoService, TodoTransaction } from '../todos/create-todo-service.js';
import { enqueueWriteBack } from '../data/outbox/enqueue-write-back.js';
import type { Disposition } from '../contract/deliveries.js';
import { claimDeliveryId, type ArrivingTodo } from '../data/deliveries/claim-delivery-id.js';
import { recordDuplicateDelivery } from '../data/deliveries/record-duplicate-delivery.js';
import { linkDeliveryTodo, settleDeliveryVerdict } from '../data/deliveries/settle-delivery.js';
import { limitStatementTime } from '../data/limit-statement-time.js';
import type { Decision } from '../providers/decide-delivery.js';
import type { Facts, Provider } from '../providers/provider.js';
import { TimeoutError } from '../platform/with-timeout.js';
import { withholdInJson } from '../contract/withhold-secrets.js';

export interface RecordedDelivery {
  /** The row's id: `deliveries show ID`. */
  id: number;
  disposition: Disposition;
  todoId: number | null;
  note: string | null;
  /** Whether write-backs were queued (a new todo's, not one found by its key). */
  queuedWriteBacks: boolean;
}

export interface RecordOptions {
  /** Nothing is written once this has passed. */
  deadline: number;
  /** The same signed body under another delivery id within this is a replay (0: off). */
  replayWindowMs: number;
  /**
   * Makes the todo and records the verdict, in the delivery's transaction: a new todo's wake
   * goes out once it has committed, and the credentials withheld from its text are sealed.
   */
  todos: TodoService;
}

const NOTE_MAX = 1000;
/** Thrown to roll a raced arrival back. */
const RACED = new Error('raced');

/**
 * One transaction, whichever provider sent it: the delivery row (which claims the source's
 * delivery id), then its todo and the write-backs that go with it, or the verdict it carries. A
 * redelivery under the same id finds the id taken — at once, or after waiting for the first to
 * commit — and is recorded as a `duplicate` receipt that makes nothing; so is a replay, the same
 * signed body under another id (claimDeliveryId). Nothing is written once `deadline` has passed: a
 * caller that stopped waiting must not have its delivery commit behind its back. A new todo's
 * wake goes out after the commit, not inside it (migrations/0012): the todo service's
 * transaction sends it.
 */
export async function recordDelivery(
  delivery: {
    provider: Provider;
    /** `github`, or the source's name. */
    source: string;
    deliveryId: string;
    facts: Facts;
    bodySha256: Buffer;
  },
  decision: Decision,
  { deadline, replayWindowMs, todos }: RecordOptions,
): Promise<RecordedDelivery> {
  const { provider, source, facts } = delivery;
  const notes = [...decision.notes];
  const note = () => (notes.length ? notes.join('; ').slice(0, NOTE_MAX) : null);
  const columns = provider.columns(facts);
  const row = {
    source,
    kind: provider.kind,
    delivery_id: delivery.deliveryId,
    event: facts.event,
    action: facts.action,
    subject: columns.subject?.slice(0, 300) ?? null,
    actor: columns.actor?.slice(0, 200) ?? null,
    installation_id: columns.installationId,
    // What the rules read is kept, but for its credentials: the todo made from it keeps those,
    // sealed, and the record says `[secret:withheld]`.
    facts: withholdInJson(facts),
    body_sha256: delivery.bodySha256,
  };
  const assertInTime = () => {
    if (Date.now() >= deadline) throw new TimeoutError('the delivery deadline passed');
  };
  const system = systemActor(provider.kind, source);

  let made: Todo | undefined;
  const record = async (
    tx: postgres.TransactionSql,
    door: TodoTransaction,
  ): Promise<RecordedDelivery | 'raced'> => {
    assertInTime();
    notes.length = decision.notes.length; // a round run again starts over
    // The todo a delivery makes goes in with its row, in the same statement (checked first).
    // `input` as made (its assignee may be dropped), for the live-key path below.
    let arriving:
      | (ArrivingTodo & { input: NewTodo } & Pick<NonNullable<Decision['todo']>, 'keyedBy'>)
      | undefined;
    if (decision.todo && !(decision.verdict && provider.verdicts)) {
      const { writeBacks, keyedBy } = decision.todo;
      let { input } = decision.todo;
      let prepared: PreparedTodo;
      try {
        prepared = await door.prepare(system, input);
      } catch (error) {
        // An assignee that does not exist (or cannot work the queue) is dropped, never fatal:
        // the check reads, and writes nothing.
        if (!(error instanceof LedgerError && error.code === 'invalid' && input.assignee))
          throw error;
        notes.push(`assignee ${input.assignee} dropped: ${error.message}`);
        input = { ...input, assignee: null };
        prepared = await door.prepare(system, input);
      }
      arriving = {
        input,
        keyedBy,
        todo: prepared,
        writeBacks: writeBacks.map((writeBack) => ({ ...writeBack, source, kind: provider.kind })),
      };
    }
    // The database gives up on its own too, rather than hold a lock for a caller long gone. It
    // goes out with the arrival, in the same write (postgres.js pipelines a transaction's
    // queries: every round trip counts while the provider waits) — and ahead of it: a query runs
    // in the order it is executed, and the arrival's are executed as soon as they are made.
    const timeout = limitStatementTime(tx, Math.max(1, deadline - Date.now()));
    const [, arrival] = await Promise.all([
      timeout,
      translateConstraintErrors(() =>
        claimDeliveryId(
          tx,
          { ...row, disposition: decision.disposition, note: note() },
          replayWindowMs,
          arriving,
        ),
      ),
    ]);
    if (arrival.outcome === 'raced') return 'raced';
    if (arrival.outcome !== 'claimed') {
      const why = arrival.outcome === 'replay' ? arrival.note : null;
      const id = arrival.id ?? (await recordDuplicateDelivery(tx, row, why));
      assertInTime();
      return { id, disposition: 'duplicate', todoId: null, note: why, queuedWriteBacks: false };
    }
    const { id } = arrival;

    if (decision.verdict && provider.verdicts) {
      const outcome = await provider.verdicts.decide(tx, door, facts, decision.verdict);
      notes.push(outcome.note);
      const disposition = outcome.decided ? 'verdict' : 'verdict_refused';
      await settleDeliveryVerdict(tx, id, disposition, note());
      assertInTime();
      return { id, disposition, todoId: null, note: note(), queuedWriteBacks: false };
    }
    if (!arriving) {
      assertInTime();
      return {
        id,
        disposition: decision.disposition,
        todoId: null,
        note: note(),
        queuedWriteBacks: false,
      };
    }

    const { input, keyedBy, writeBacks } = arriving;
    let todo = arrival.todo;
    if (todo) {
      made = todo;
      door.inserted(todo);
    } else {
      // Its key was live: the live todo is found (or, if it finished meanwhile, made now).
      const created = await door.create(system, input);
      todo = created.todo;
      if (created.created) {
        made = todo;
        for (const writeBack of writeBacks) {
          await enqueueWriteBack(tx, { ...writeBack, todoId: todo.id });
        }
      } else {
        notes.push(
          `todo ${displayId(todo.id)} already existed for ${keyedBy === 'delivery' ? 'this delivery' : 'what this delivery is about'} (same idempotency key)`,
        );
      }
      await linkDeliveryTodo(tx, id, todo.id, note());
    }
    assertInTime();
    return {
      id,
      disposition: decision.disposition,
      todoId: todo.id,
      note: note(),
      queuedWriteBacks: made !== undefined && writeBacks.length > 0,
    };
  };
  // A claim of the same id committed while the arrival ran, after its todo was inserted: rolled
  // back, the delivery is recorded again, and finds its id taken.
  let recorded: RecordedDelivery | 'raced' = 'raced';
  for (let round = 0; recorded === 'raced' && round < 3; round++) {
    made = undefined;
    recorded = await todos
      .transaction(async (tx, door) => {
        const result = await record(tx, door);
        if (result === 'raced') throw RACED;
        return result;
      })
      .catch((error: unknown) => {
        if (error === RACED) return 'raced' as const;
        throw error;
      });
  }
  if (recorded === 'raced')
    throw new Error(`delivery ${delivery.deliveryId} kept racing its redelivery`);
  return recorded;
}

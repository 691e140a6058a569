import type postgres from 'postgres';
import type { Actor } from '../data/actor.js';
import {
  createTodo,
  prepareTodo,
  type CreatedTodo,
  type NewTodo,
  type PreparedTodo,
} from '../data/todos/create-todo.js';
import type { Todo, Verdict } from '../data/todos/todo.js';
import { writingTransactionId } from '../data/todos/wake-channel.js';
import { decideOn } from './decide.js';
import { writeOptions, type TodoServiceState } from './todo-service-state.js';

/**
 * The service's verbs inside one transaction of the caller's, which writes rows of its own with
 * them (the intake: a delivery's row, its todo and its write-backs, or the verdict it carries).
 */
export interface TodoTransaction {
  /**
   * A new todo, checked as `create` checks it, for a statement of the caller's to insert
   * (the intake's arrival, claimDeliveryId); say `inserted` once it has.
   */
  prepare(actor: Actor, input: NewTodo): Promise<PreparedTodo>;
  /** The caller's statement inserted the prepared todo: its wake goes out after the commit. */
  inserted(todo: Todo): void;
  /** A todo made, or the live one its key names; a new one's wake goes out after the commit. */
  create(actor: Actor, input: NewTodo): Promise<CreatedTodo>;
  /** A verdict (src/todos/decide.ts), recorded with the caller's rows. */
  decide(actor: Actor, id: number, verdict: Verdict, note?: string | null): Promise<Todo>;
}

/**
 * Runs `work` in one transaction, with the service's verbs bound to it. What they leave for
 * after the commit (the new todos' wakes) goes out once it has committed, and not at all if it
 * rolled back: a retried transaction announces only its last round.
 */
export async function inTransaction<T>(
  state: TodoServiceState,
  work: (tx: postgres.TransactionSql, todos: TodoTransaction) => Promise<T>,
): Promise<T> {
  const made: Todo[] = [];
  let wakeId: string | undefined;
  const result = (await state.sql.begin(async (tx) => {
    // The transaction's id, asked for as soon as a todo is prepared, rides along with the
    // caller's statements (postgres.js pipelines a transaction's queries): no round trip of
    // its own.
    let asked: Promise<string> | undefined;
    const transactionId = () => {
      if (!asked) {
        asked = writingTransactionId(tx);
        asked.catch(() => {}); // a transaction that fails says so through its own statements
      }
      return asked;
    };
    const todos: TodoTransaction = {
      prepare(actor, input) {
        if (state.hooks.announce) void transactionId();
        return prepareTodo(tx, actor, input, writeOptions(state));
      },
      inserted: (todo) => void made.push(todo),
      async create(actor, input) {
        const { wakeId: id, ...created } = await createTodo(tx, actor, input, writeOptions(state));
        if (created.created) {
          made.push(created.todo);
          wakeId = id;
        }
        return created;
      },
      decide: (actor, id, verdict, note) => decideOn(state, tx, actor, id, verdict, note),
    };
    const value = await work(tx, todos);
    if (made.length > 0 && state.hooks.announce) wakeId ??= await transactionId();
    return value;
  })) as T;
  if (made.length > 0 && wakeId) state.hooks.announce?.(made, wakeId);
  return result;
}

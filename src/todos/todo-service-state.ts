import type postgres from 'postgres';
import type { Actor } from '../data/actor.js';
import type { HeldBack } from '../contract/queue.js';
import type { Todo, TodoSource } from '../data/todos/todo.js';
import type { Seal, SecretKeeper } from '../data/todos/todo-secrets.js';

/** What other parts of the server do when a todo changes: bound once, by the server. */
export interface TodoHooks {
  /**
   * Announces the wakes of new todos after their commit, written by the transaction `wakeId`
   * (src/wakes/wake-notifier.ts); with it, creates do not NOTIFY inside their own commit.
   * Without it, the database's trigger does.
   */
  announce?: (todos: Todo[], wakeId: string) => void;
  /**
   * A todo from one of `sources` was completed (e.g. GitHub write-back queues the summary as a
   * comment); a todo from anywhere else is completed without a transaction of its own.
   */
  afterComplete?: {
    sources: readonly TodoSource[];
    run(tx: postgres.TransactionSql, todo: Todo, actor: Actor): Promise<void>;
  };
  /** Someone replied on a todo (e.g. GitHub write-back queues the reply as a comment). */
  afterReply?: (
    tx: postgres.TransactionSql,
    todo: Todo,
    text: string,
    actor: Actor,
  ) => Promise<void>;
  /** A claim found its queue at a limit (e.g. counted in /metrics). */
  heldBack?: (heldBack: HeldBack) => void;
  /**
   * Credentials were revoked (a human deactivated): this process forgets the tokens it holds in
   * memory at once, before the NOTIFY that tells every process reaches it.
   */
  revoked?: () => void;
  /**
   * Seals the credentials withheld from a new todo's text, and opens them for `secret show`: the
   * server's secret box. Without it they are withheld and not kept.
   */
  box?: SecretKeeper | null;
}

/** What every verb of the todo service works with: the database and the hooks bound to it. */
export interface TodoServiceState {
  sql: postgres.Sql;
  hooks: TodoHooks;
  /** The box's seal, for the credentials withheld from what a verb writes; null without one. */
  seal: Seal | null;
}

export function todoServiceState(sql: postgres.Sql, hooks: TodoHooks): TodoServiceState {
  const { box } = hooks;
  return { sql, hooks, seal: box ? (value) => box.seal(value) : null };
}

/**
 * How a new todo's wake goes out: announced by the service after the commit when the server
 * gave it a notifier, else by the trigger inside it.
 */
export const writeOptions = ({ hooks, seal }: TodoServiceState) => ({
  announceWake: hooks.announce !== undefined,
  seal,
});

/** Where a todo made by a person or an agent comes from: the client they used, else the API. */
export function sourceOf(actor: Actor): TodoSource {
  return actor.via === 'cli' || actor.via === 'mcp' || actor.via === 'channel' ? actor.via : 'api';
}

import type postgres from 'postgres';
import {
  claimNextOrHeldBack,
  completeTodo,
  createTodo,
  deactivateHuman,
  replyToTodo,
  requestApproval,
  type Actor,
  type ApprovalRequest,
  type Completion,
  type ClaimNextAnswer,
  type CreatedTodo,
  type Deactivation,
  type HeldBack,
  type NewTodo,
  conflict,
  showSecret,
  type SecretKeeper,
  type SecretOptions,
  type ShownSecret,
  type Todo,
  type TodoSource,
} from '../data/index.js';

/** What other parts of the server do when a todo changes, inside the same transaction. */
export interface TodoHooks {
  /**
   * Announces the wakes of new todos after their commit (src/wakes/wake-notifier.ts); with
   * it, creates do not NOTIFY inside their own commit. Without it, the database's trigger does.
   */
  announce?: (todos: Todo[]) => void;
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
   * Seals the credentials withheld from a new todo's text, and opens them for `secret show`: the
   * server's secret box. Without it they are withheld and not kept.
   */
  box?: SecretKeeper | null;
}

/**
 * The ledger's operations that carry side effects, each bound once to them: every adapter (the
 * JSON API, MCP, the console) calls these rather than the ledger where a hook must run with it.
 */
export interface TodoService {
  /** A todo from a person or an agent; a new one's wake is announced after its commit. */
  create(actor: Actor, input: Omit<NewTodo, 'source'>): Promise<CreatedTodo>;
  /** Claims the queue's next todo, or says when its limits let one be claimed again. */
  claimNext(actor: Actor, queue: string, leaseSeconds?: number): Promise<ClaimNextAnswer>;
  /** Completes a claimed todo; `afterComplete` commits with it or not at all. */
  complete(actor: Actor, id: number, leaseToken: string, completion: Completion): Promise<Todo>;
  /** A reply on a todo's history; `afterReply` commits with it or not at all. */
  reply(actor: Actor, id: number, text: string): Promise<{ todo: Todo; text: string }>;
  /** An approval asked by a person or an agent, recorded as coming from where they are. */
  requestApproval(actor: Actor, input: Omit<ApprovalRequest, 'source'>): Promise<Todo>;
  /** A withheld credential's value, for whoever may read its todo; the fetch is recorded. */
  showSecret(actor: Actor, id: string): Promise<ShownSecret>;
  /** How credentials withheld from a todo's text are kept, for the ledger calls made directly. */
  secrets: SecretOptions;
  /**
   * Deactivates a human (src/data/principals/deactivate-human.ts); the approvals that went to their backup
   * are announced to the backup after the commit, as new ones are.
   */
  deactivateHuman(actor: Actor, name: string): Promise<Deactivation>;
}

/** The todo service over `sql`, with the server's hooks (none in a test that needs none). */
export function createTodoService(sql: postgres.Sql, hooks: TodoHooks = {}): TodoService {
  const { announce, afterComplete, afterReply, heldBack, box } = hooks;
  const seal = box ? (value: string) => box.seal(value) : null;
  return {
    async create(actor, input) {
      const created = await createTodo(
        sql,
        actor,
        { ...input, source: sourceOf(actor) },
        { announceWake: announce !== undefined, seal },
      );
      if (created.created) announce?.([created.todo]);
      return created;
    },

    async claimNext(actor, queue, leaseSeconds) {
      const answer = await claimNextOrHeldBack(sql, actor, queue, leaseSeconds);
      if (answer.held_back) heldBack?.(answer.held_back);
      return answer;
    },

    complete: (actor, id, leaseToken, completion) =>
      // Concurrent completions share one statement; only a todo the hook may act on takes a
      // transaction of its own.
      completeTodo(
        sql,
        actor,
        id,
        leaseToken,
        completion,
        afterComplete && {
          sources: afterComplete.sources,
          run: (tx, done) => afterComplete.run(tx, done, actor),
        },
      ),

    reply: (actor, id, text) =>
      sql.begin(async (tx) => {
        const replied = await replyToTodo(tx, actor, id, text);
        await afterReply?.(tx, replied.todo, replied.text, actor);
        return replied;
      }),

    requestApproval: (actor, input) =>
      requestApproval(sql, actor, { ...input, source: sourceOf(actor) }, { seal }),

    async showSecret(actor, id) {
      if (!box) {
        throw conflict(
          'no secret can be opened on this server: it has no SWITCHBOARD_SECRET_KEY (a credential found without one was withheld and not kept)',
        );
      }
      return showSecret(sql, actor, id, (sealed) => box.open(sealed));
    },

    secrets: { seal },

    async deactivateHuman(actor, name) {
      const deactivation = await deactivateHuman(sql, actor, name);
      announce?.(deactivation.approvals.filter((approval) => approval.assignee !== null));
      return deactivation;
    },
  };
}

/** Where a todo made by a person or an agent comes from: the client they used, else the API. */
function sourceOf(actor: Actor): TodoSource {
  return actor.via === 'cli' || actor.via === 'mcp' || actor.via === 'channel' ? actor.via : 'api';
}

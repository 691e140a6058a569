import type postgres from 'postgres';
import type { Actor } from '../data/actor.js';
import type { Deactivation } from '../data/principals/deactivate-human.js';
import type { ClaimNextAnswer } from '../data/todos/claim-todo.js';
import type { Completion } from '../data/todos/complete-todo.js';
import type { CreatedTodo, NewTodo } from '../data/todos/create-todo.js';
import type { ApprovalRequest } from '../data/todos/request-approval.js';
import type { SweepCounts } from '../data/todos/sweep-todos.js';
import type { ClaimedTodo, Todo, Verdict } from '../data/todos/todo.js';
import type { ShownSecret } from '../data/todos/todo-secrets.js';
import { cancel, cancelSessionApprovals } from './cancel.js';
import { claim, claimNext } from './claim.js';
import { complete } from './complete.js';
import { create } from './create.js';
import { deactivateHuman } from './deactivate-human.js';
import { decide } from './decide.js';
import { fail } from './fail.js';
import { heartbeat } from './heartbeat.js';
import { inTransaction, type TodoTransaction } from './in-transaction.js';
import { release } from './release.js';
import { releaseQuarantined } from './release-quarantined.js';
import { reply } from './reply.js';
import { requestApproval } from './request-approval.js';
import { showSecret } from './show-secret.js';
import { sweep } from './sweep.js';
import { todoServiceState, type TodoHooks } from './todo-service-state.js';

export type { TodoHooks } from './todo-service-state.js';
export type { TodoTransaction } from './in-transaction.js';

/**
 * The one door for changing a todo: every adapter (the JSON API, MCP, the console, Slack, the
 * intake, the server's sweeper and sessions) changes todos through these verbs, each bound once
 * to its side effects — the wake announced after a commit, the write-back that commits with it,
 * the held-back count, the tokens forgotten. The ledger (src/data) decides; adapters only read it.
 */
export interface TodoService {
  /** A todo from a person or an agent; a new one's wake is announced after its commit. */
  create(actor: Actor, input: Omit<NewTodo, 'source'>): Promise<CreatedTodo>;
  /** Claims one todo by id. */
  claim(actor: Actor, id: number, leaseSeconds?: number): Promise<ClaimedTodo>;
  /** Claims the queue's next todo, or says when its limits let one be claimed again. */
  claimNext(actor: Actor, queue: string, leaseSeconds?: number): Promise<ClaimNextAnswer>;
  heartbeat(actor: Actor, id: number, leaseToken: string, leaseSeconds?: number): Promise<Todo>;
  /** Completes a claimed todo; `afterComplete` commits with it or not at all. */
  complete(actor: Actor, id: number, leaseToken: string, completion: Completion): Promise<Todo>;
  fail(actor: Actor, id: number, leaseToken: string, reason?: string | null): Promise<Todo>;
  release(actor: Actor, id: number, leaseToken: string): Promise<Todo>;
  cancel(actor: Actor, id: number, reason?: string | null): Promise<Todo>;
  /** A reply on a todo's history; `afterReply` commits with it or not at all. */
  reply(actor: Actor, id: number, text: string): Promise<{ todo: Todo; text: string }>;
  /** A human's verdict, from any surface (`actor.via`); the first one wins. */
  decide(actor: Actor, id: number, verdict: Verdict, note?: string | null): Promise<Todo>;
  /** A human releases an untrusted sender's todo from quarantine. */
  releaseQuarantined(actor: Actor, id: number): Promise<Todo>;
  /** An approval asked by a person or an agent, recorded as coming from where they are. */
  requestApproval(actor: Actor, input: Omit<ApprovalRequest, 'source'>): Promise<Todo>;
  /** A withheld credential's value, for whoever may read its todo; the fetch is recorded. */
  showSecret(actor: Actor, id: string): Promise<ShownSecret>;
  /** Deactivates a human; their reassigned approvals are announced, their tokens forgotten. */
  deactivateHuman(actor: Actor, name: string): Promise<Deactivation>;
  /** The approvals asked from consumer sessions that went away are canceled. */
  cancelSessionApprovals(sessionIds: string[]): Promise<number[]>;
  /** Ended leases, due retries and expired approvals, tidied (the sweeper's pass). */
  sweep(): Promise<SweepCounts>;
  /** `work` in one transaction with the verbs it needs; their wakes go out after its commit. */
  transaction<T>(
    work: (tx: postgres.TransactionSql, todos: TodoTransaction) => Promise<T>,
  ): Promise<T>;
}

/** The todo service over `sql`, with the server's hooks (none in a test that needs none). */
export function createTodoService(sql: postgres.Sql, hooks: TodoHooks = {}): TodoService {
  const state = todoServiceState(sql, hooks);
  return {
    create: (actor, input) => create(state, actor, input),
    claim: (actor, id, leaseSeconds) => claim(state, actor, id, leaseSeconds),
    claimNext: (actor, queue, leaseSeconds) => claimNext(state, actor, queue, leaseSeconds),
    heartbeat: (actor, id, token, leaseSeconds) => heartbeat(state, actor, id, token, leaseSeconds),
    complete: (actor, id, token, completion) => complete(state, actor, id, token, completion),
    fail: (actor, id, token, reason) => fail(state, actor, id, token, reason),
    release: (actor, id, token) => release(state, actor, id, token),
    cancel: (actor, id, reason) => cancel(state, actor, id, reason),
    reply: (actor, id, text) => reply(state, actor, id, text),
    decide: (actor, id, verdict, note) => decide(state, actor, id, verdict, note),
    releaseQuarantined: (actor, id) => releaseQuarantined(state, actor, id),
    requestApproval: (actor, input) => requestApproval(state, actor, input),
    showSecret: (actor, id) => showSecret(state, actor, id),
    deactivateHuman: (actor, name) => deactivateHuman(state, actor, name),
    cancelSessionApprovals: (sessionIds) => cancelSessionApprovals(state, sessionIds),
    sweep: () => sweep(state),
    transaction: (work) => inTransaction(state, work),
  };
}

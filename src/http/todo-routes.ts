import { Router } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import {
  cancelTodo,
  claimNextOrHeldBack,
  claimTodo,
  completeTodo,
  createTodo,
  decideApproval,
  failTodo,
  getTodoWithHistory,
  heartbeatTodo,
  LEASE_DEFAULT_SECONDS,
  LedgerError,
  LIST_LIMIT_MAX,
  listTodos,
  releaseQuarantinedTodo,
  releaseTodo,
  replyToTodo,
  requestApproval,
  TODO_STATES,
  type Actor,
  type HeldBack,
  type Todo,
} from '../ledger/index.js';
import { isOwnChannelSession } from '../delivery/is-own-channel-session.js';
import { actorOf } from './authenticate.js';

/** What other parts of the server do when a todo changes, inside the same transaction. */
export interface TodoHooks {
  /**
   * Announces the wakes of new todos after their commit (src/delivery/wake-notifier.ts); with
   * it, creates do not NOTIFY inside their own commit. Without it, the database's trigger does.
   */
  announce?: (todos: Todo[]) => void;
  /** A todo was completed (e.g. GitHub write-back queues the summary as a comment). */
  afterComplete?: (tx: postgres.TransactionSql, todo: Todo, actor: Actor) => Promise<void>;
  /** Someone replied on a todo (e.g. GitHub write-back queues the reply as a comment). */
  afterReply?: (
    tx: postgres.TransactionSql,
    todo: Todo,
    text: string,
    actor: Actor,
  ) => Promise<void>;
  /** A claim found its queue at a limit (e.g. counted in /metrics). */
  heldBack?: (heldBack: HeldBack) => void;
}

// Digits only: `0x10`, `1e3` or ` 1` are not ids, though Number() would make them one.
const PositiveInteger = z
  .string()
  .regex(/^[1-9][0-9]*$/, 'must be a whole number from 1')
  .transform(Number)
  .pipe(z.number().max(Number.MAX_SAFE_INTEGER));
const Id = z.object({ id: PositiveInteger });
const LeaseSeconds = z.number().int().min(1).max(86_400).default(LEASE_DEFAULT_SECONDS);
const LeaseToken = z.uuid({ error: 'lease_token must be the UUID returned by claim' });
const Text = z.string().max(65_536);

const ListQuery = z.strictObject({
  queue: z.string().optional(),
  state: z.enum([...TODO_STATES, 'open', 'all']).optional(),
  mine: z
    .enum(['true', 'false', '1', '0'])
    .transform((value) => value === 'true' || value === '1')
    .optional(),
  limit: PositiveInteger.pipe(z.number().max(LIST_LIMIT_MAX)).optional(),
  before: PositiveInteger.optional(),
});

const CreateBody = z.strictObject({
  queue: z.string(),
  title: z.string().max(10_000),
  body: Text.nullish(),
  kind: z.string().optional(),
  key: z.string().nullish(),
  assignee: z.string().nullish(),
  url: z.string().max(2048).nullish(),
  max_attempts: z.number().int().optional(),
});

const ClaimBody = z.strictObject({ lease_seconds: LeaseSeconds });
const HeartbeatBody = z.strictObject({ lease_token: LeaseToken, lease_seconds: LeaseSeconds });
const CompleteBody = z.strictObject({
  lease_token: LeaseToken,
  summary: Text.nullish(),
  result: z.json().optional(),
});
const FailBody = z.strictObject({ lease_token: LeaseToken, reason: Text.nullish() });
const LeaseBody = z.strictObject({ lease_token: LeaseToken });
const NoteBody = z.strictObject({ note: Text.nullish() });
const ReplyBody = z.strictObject({ text: z.string() });
const CancelBody = z.strictObject({ reason: Text.nullish() });
const ApprovalBody = z.strictObject({
  question: z.string().max(10_000),
  body: Text.nullish(),
  about_todo_id: z.number().int().positive().nullish(),
  request_id: z.string().nullish(),
  ttl_seconds: z.number().int().optional(),
  /** The asker's channel session (from its event stream's `ready`): the approval ends with it. */
  channel_session: z.uuid().optional(),
});

/** An empty body (no JSON sent) reads as `{}`, so that optional-only bodies may be left out. */
const bodyOf = (body: unknown) => body ?? {};

/** The JSON API for todos: a thin translation of requests onto ledger operations. */
export function todoRoutes(sql: postgres.Sql, hooks: TodoHooks = {}): Router {
  const router = Router();
  const source = (actor: Actor) =>
    actor.via === 'cli' || actor.via === 'mcp' || actor.via === 'channel' ? actor.via : 'api';

  router.get('/todos', async (req, res) => {
    const query = ListQuery.parse(req.query);
    res.json({ todos: await listTodos(sql, actorOf(res), query) });
  });

  router.post('/todos', async (req, res) => {
    const body = CreateBody.parse(bodyOf(req.body));
    const actor = actorOf(res);
    const { announce } = hooks;
    const { todo, created } = await createTodo(
      sql,
      actor,
      { ...body, source: source(actor) },
      { announceWake: announce !== undefined },
    );
    if (created) announce?.([todo]);
    res.status(created ? 201 : 200).json({ todo, created });
  });

  router.get('/todos/:id', async (req, res) => {
    const { id } = Id.parse(req.params);
    res.json(await getTodoWithHistory(sql, actorOf(res), id));
  });

  router.post('/todos/:id/claim', async (req, res) => {
    const { id } = Id.parse(req.params);
    const { lease_seconds } = ClaimBody.parse(bodyOf(req.body));
    res.json({ todo: await claimTodo(sql, actorOf(res), id, lease_seconds) });
  });

  // `held_back` only when the queue's limits hold its todos back: else `{todo}` as ever.
  router.post('/queues/:queue/claim', async (req, res) => {
    const { lease_seconds } = ClaimBody.parse(bodyOf(req.body));
    const { todo, held_back } = await claimNextOrHeldBack(
      sql,
      actorOf(res),
      String(req.params.queue),
      lease_seconds,
    );
    if (held_back) hooks.heldBack?.(held_back);
    res.json(held_back ? { todo, held_back } : { todo });
  });

  router.post('/todos/:id/heartbeat', async (req, res) => {
    const { id } = Id.parse(req.params);
    const { lease_token, lease_seconds } = HeartbeatBody.parse(bodyOf(req.body));
    res.json({ todo: await heartbeatTodo(sql, actorOf(res), id, lease_token, lease_seconds) });
  });

  router.post('/todos/:id/complete', async (req, res) => {
    const { id } = Id.parse(req.params);
    const { lease_token, summary, result } = CompleteBody.parse(bodyOf(req.body));
    const actor = actorOf(res);
    const { afterComplete } = hooks;
    const todo = await completeTodo(
      sql,
      actor,
      id,
      lease_token,
      { summary, result },
      afterComplete && ((tx, done) => afterComplete(tx, done, actor)),
    );
    res.json({ todo });
  });

  router.post('/todos/:id/fail', async (req, res) => {
    const { id } = Id.parse(req.params);
    const { lease_token, reason } = FailBody.parse(bodyOf(req.body));
    res.json({ todo: await failTodo(sql, actorOf(res), id, lease_token, reason) });
  });

  router.post('/todos/:id/release', async (req, res) => {
    const { id } = Id.parse(req.params);
    const { lease_token } = LeaseBody.parse(bodyOf(req.body));
    res.json({ todo: await releaseTodo(sql, actorOf(res), id, lease_token) });
  });

  router.post('/todos/:id/cancel', async (req, res) => {
    const { id } = Id.parse(req.params);
    const { reason } = CancelBody.parse(bodyOf(req.body));
    res.json({ todo: await cancelTodo(sql, actorOf(res), id, reason) });
  });

  router.post('/todos/:id/release-quarantine', async (req, res) => {
    const { id } = Id.parse(req.params);
    res.json({ todo: await releaseQuarantinedTodo(sql, actorOf(res), id) });
  });

  for (const [verb, verdict] of [
    ['approve', 'allow'],
    ['deny', 'deny'],
  ] as const) {
    router.post(`/todos/:id/${verb}`, async (req, res) => {
      const { id } = Id.parse(req.params);
      const { note } = NoteBody.parse(bodyOf(req.body));
      res.json({ todo: await decideApproval(sql, actorOf(res), id, verdict, note) });
    });
  }

  router.post('/todos/:id/reply', async (req, res) => {
    const { id } = Id.parse(req.params);
    const { text } = ReplyBody.parse(bodyOf(req.body));
    const actor = actorOf(res);
    const reply = await sql.begin(async (tx) => {
      const replied = await replyToTodo(tx, actor, id, text);
      await hooks.afterReply?.(tx, replied.todo, replied.text, actor);
      return replied;
    });
    res.json(reply);
  });

  router.post('/approvals', async (req, res) => {
    const { channel_session, ...body } = ApprovalBody.parse(bodyOf(req.body));
    const actor = actorOf(res);
    if (channel_session && !(await isOwnChannelSession(sql, channel_session, actor.name))) {
      throw new LedgerError('invalid', 'channel_session is not an open channel session of yours');
    }
    const todo = await requestApproval(sql, actor, {
      ...body,
      source: source(actor),
      meta: channel_session ? { channel_session } : undefined,
    });
    res.status(201).json({ todo });
  });

  return router;
}

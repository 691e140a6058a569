import { Router } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import { LedgerError } from '../../data/ledger-error.js';
import { getTodoWithHistory } from '../../data/todos/get-todo.js';
import { LIST_LIMIT_MAX, listTodos } from '../../data/todos/list-todos.js';
import { LEASE_DEFAULT_SECONDS, TODO_STATES } from '../../data/todos/todo.js';
import { SECRET_ID } from '../../contract/secret.js';
import { isOwnChannelSession } from '../../data/wakes/is-own-channel-session.js';
import type { TodoService } from '../../todos/create-todo-service.js';
import { actorOf } from '../../kit/http/authenticate.js';

// Digits only: `0x10`, `1e3` or ` 1` are not ids, though Number() would make them one.
const PositiveInteger = z
  .string()
  .regex(/^[1-9][0-9]*$/, 'must be a whole number from 1')
  .transform(Number)
  .pipe(z.number().max(Number.MAX_SAFE_INTEGER));
const Id = z.object({ id: PositiveInteger });
const SecretId = z.object({
  id: z.string().regex(SECRET_ID, 'must be the id of a [secret:ID] in a todo, e.g. k3j9x2m4q7ab'),
});
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

/**
 * The JSON API for todos: a thin translation of requests onto the ledger's reads and the todo
 * service's verbs, which change todos with their side effects.
 */
export function todoRoutes(sql: postgres.Sql, todos: TodoService): Router {
  const router = Router({ caseSensitive: true });

  router.get('/todos', async (req, res) => {
    const query = ListQuery.parse(req.query);
    res.json({ todos: await listTodos(sql, actorOf(res), query) });
  });

  router.post('/todos', async (req, res) => {
    const body = CreateBody.parse(bodyOf(req.body));
    const { todo, created } = await todos.create(actorOf(res), body);
    res.status(created ? 201 : 200).json({ todo, created });
  });

  router.get('/todos/:id', async (req, res) => {
    const { id } = Id.parse(req.params);
    res.json(await getTodoWithHistory(sql, actorOf(res), id));
  });

  // The value of a credential withheld from a todo: recorded in the todo's history, never cached.
  router.get('/secrets/:id', async (req, res) => {
    const { id } = SecretId.parse(req.params);
    const secret = await todos.showSecret(actorOf(res), id);
    res.set('cache-control', 'no-store').json({ secret });
  });

  router.post('/todos/:id/claim', async (req, res) => {
    const { id } = Id.parse(req.params);
    const { lease_seconds } = ClaimBody.parse(bodyOf(req.body));
    res.json({ todo: await todos.claim(actorOf(res), id, lease_seconds) });
  });

  // `held_back` only when the queue's limits hold its todos back: else `{todo}` as ever.
  router.post('/queues/:queue/claim', async (req, res) => {
    const { lease_seconds } = ClaimBody.parse(bodyOf(req.body));
    const { todo, held_back } = await todos.claimNext(
      actorOf(res),
      String(req.params.queue),
      lease_seconds,
    );
    res.json(held_back ? { todo, held_back } : { todo });
  });

  router.post('/todos/:id/heartbeat', async (req, res) => {
    const { id } = Id.parse(req.params);
    const { lease_token, lease_seconds } = HeartbeatBody.parse(bodyOf(req.body));
    res.json({ todo: await todos.heartbeat(actorOf(res), id, lease_token, lease_seconds) });
  });

  router.post('/todos/:id/complete', async (req, res) => {
    const { id } = Id.parse(req.params);
    const { lease_token, summary, result } = CompleteBody.parse(bodyOf(req.body));
    res.json({ todo: await todos.complete(actorOf(res), id, lease_token, { summary, result }) });
  });

  router.post('/todos/:id/fail', async (req, res) => {
    const { id } = Id.parse(req.params);
    const { lease_token, reason } = FailBody.parse(bodyOf(req.body));
    res.json({ todo: await todos.fail(actorOf(res), id, lease_token, reason) });
  });

  router.post('/todos/:id/release', async (req, res) => {
    const { id } = Id.parse(req.params);
    const { lease_token } = LeaseBody.parse(bodyOf(req.body));
    res.json({ todo: await todos.release(actorOf(res), id, lease_token) });
  });

  router.post('/todos/:id/cancel', async (req, res) => {
    const { id } = Id.parse(req.params);
    const { reason } = CancelBody.parse(bodyOf(req.body));
    res.json({ todo: await todos.cancel(actorOf(res), id, reason) });
  });

  router.post('/todos/:id/release-quarantine', async (req, res) => {
    const { id } = Id.parse(req.params);
    res.json({ todo: await todos.releaseQuarantined(actorOf(res), id) });
  });

  for (const [verb, verdict] of [
    ['approve', 'allow'],
    ['deny', 'deny'],
  ] as const) {
    router.post(`/todos/:id/${verb}`, async (req, res) => {
      const { id } = Id.parse(req.params);
      const { note } = NoteBody.parse(bodyOf(req.body));
      res.json({ todo: await todos.decide(actorOf(res), id, verdict, note) });
    });
  }

  router.post('/todos/:id/reply', async (req, res) => {
    const { id } = Id.parse(req.params);
    const { text } = ReplyBody.parse(bodyOf(req.body));
    res.json(await todos.reply(actorOf(res), id, text));
  });

  router.post('/approvals', async (req, res) => {
    const { channel_session, ...body } = ApprovalBody.parse(bodyOf(req.body));
    const actor = actorOf(res);
    if (channel_session && !(await isOwnChannelSession(sql, channel_session, actor.name))) {
      throw new LedgerError('invalid', 'channel_session is not an open channel session of yours');
    }
    const todo = await todos.requestApproval(actor, {
      ...body,
      meta: channel_session ? { channel_session } : undefined,
    });
    res.status(201).json({ todo });
  });

  return router;
}

import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type postgres from 'postgres';
import { z } from 'zod';
import type { TodoHooks } from '../http/todo-routes.js';
import {
  claimNextTodo,
  claimTodo,
  completeTodo,
  createTodo,
  failTodo,
  getTodoWithHistory,
  heartbeatTodo,
  LedgerError,
  listTodos,
  releaseTodo,
  replyToTodo,
  requestApproval,
  TODO_STATES,
  type Actor,
  type LedgerErrorCode,
  type Todo,
} from '../ledger/index.js';
import type { Logger } from '../logger.js';

export interface ToolContext {
  sql: postgres.Sql;
  actor: Actor;
  hooks: TodoHooks;
  log: Logger;
  /** Lease tokens this session got from its claims, so an agent need not carry them around. */
  leases: Map<number, string>;
}

// Every argument's error message says what to send instead: it is what the model reads.
const todoId = z
  .number({ error: 'todo_id must be the number of a todo, e.g. 42 (list_todos shows them)' })
  .int({ error: 'todo_id must be a whole number' })
  .positive({ error: 'todo_id must be positive' });
const queue = z.string({ error: 'queue must be a queue name such as "reviews"' }).max(64);
const leaseSeconds = z
  .number({ error: 'lease_seconds must be a number of seconds' })
  .int()
  .min(1, { error: 'lease_seconds must be at least 1' })
  .max(86_400, { error: 'lease_seconds must be at most 86400 (24 h)' })
  .optional()
  .describe(
    'How long the claim holds before others may take the todo (default 300, at most 86400).',
  );
const leaseToken = z
  .string({ error: 'lease_token must be the string returned by claim_todo or claim_next' })
  .optional()
  .describe('The lease token from your claim; may be left out when this session made the claim.');
const text = (what: string, max = 65_536) =>
  z
    .string({ error: `${what} must be text` })
    .max(max, { error: `${what} is too long (at most ${max} characters)` });

/**
 * Any JSON value. Not z.json(), which recurses and so overflows the stack on a value nested
 * thousands of levels deep; the ledger walks it without recursion and refuses over 64 levels.
 */
const result = z
  .unknown()
  .describe('Any JSON value to keep with the todo (at most 64 levels deep).');

/**
 * Tool inputs, built once for every session (a session only binds its principal to them).
 * Every argument's error message says what to send instead: it is what the model reads. Unknown
 * arguments are refused, not dropped: a misspelt optional one would otherwise go unnoticed.
 */
const INPUT = {
  list_todos: z.strictObject({
    queue: queue.optional(),
    state: z
      .enum([...TODO_STATES, 'open', 'all'], {
        error: `state must be one of ${[...TODO_STATES, 'open', 'all'].join(', ')}`,
      })
      .optional(),
    mine: z
      .boolean({ error: 'mine must be true or false' })
      .optional()
      .describe('Only todos assigned to you or claimed by you.'),
    limit: z.number({ error: 'limit must be a number' }).int().min(1).max(500).optional(),
  }),
  get_todo: z.strictObject({ todo_id: todoId }),
  claim_todo: z.strictObject({ todo_id: todoId, lease_seconds: leaseSeconds }),
  claim_next: z.strictObject({ queue, lease_seconds: leaseSeconds }),
  heartbeat_todo: z.strictObject({
    todo_id: todoId,
    lease_token: leaseToken,
    lease_seconds: leaseSeconds,
  }),
  complete_todo: z.strictObject({
    todo_id: todoId,
    lease_token: leaseToken,
    summary: text('summary').optional(),
    result: result.optional(),
  }),
  fail_todo: z.strictObject({
    todo_id: todoId,
    lease_token: leaseToken,
    reason: text('reason').optional(),
  }),
  release_todo: z.strictObject({ todo_id: todoId, lease_token: leaseToken }),
  create_todo: z.strictObject({
    queue,
    title: text('title', 10_000),
    body: text('body').optional(),
    kind: z.string({ error: 'kind must be dotted words such as "followup.docs"' }).optional(),
    key: text('key', 200).optional().describe('Idempotency key.'),
    assignee: z.string({ error: 'assignee must be the name of an agent or human' }).optional(),
  }),
  reply: z.strictObject({ todo_id: todoId, text: text('text', 16_384) }),
  request_approval: z.strictObject({
    question: text('question', 10_000),
    body: text('body').optional().describe('Details for the human.'),
    todo_id: todoId.optional().describe('The todo the question is about.'),
    ttl_seconds: z
      .number({ error: 'ttl_seconds must be a number of seconds' })
      .int()
      .min(1)
      .max(604_800)
      .optional(),
  }),
};

/** What a refusal tells the model to do next, by ledger code. */
const NEXT_STEP: Record<LedgerErrorCode, string> = {
  not_found: 'Check the id with list_todos; todos outside your queues are not visible to you.',
  conflict: 'Leave this todo and take another with claim_next, or check its state with get_todo.',
  forbidden: 'This is not yours to do; ask your human owner, or work another queue.',
  lease_lost:
    'Your claim on it ended; do not report this work. Claim it again with claim_todo if it is still pending.',
  invalid: 'Fix the arguments and call again.',
};

function ok(data: unknown, summary?: string): CallToolResult {
  return {
    content: [
      {
        type: 'text',
        text: summary ? `${summary}\n${JSON.stringify(data)}` : JSON.stringify(data),
      },
    ],
    structuredContent: data as Record<string, unknown>,
  };
}

function refusal(error: LedgerError): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: `${error.message}. ${NEXT_STEP[error.code]}` }],
  };
}

/** A compact todo for lists: get_todo has the rest. */
function listed(todo: Todo) {
  const { id, queue, kind, title, state, assignee, claimed_by, url, attributed_to, created_at } =
    todo;
  return { id, queue, kind, title, state, assignee, claimed_by, url, attributed_to, created_at };
}

/** The tools of DESIGN §5.4, bound to one principal's session. None can record a verdict. */
export function registerTodoTools(server: McpServer, context: ToolContext): void {
  const { sql, actor, hooks, leases, log } = context;
  /**
   * Runs a tool body; the ledger's refusals become `isError` results with a next step. Anything
   * else is a bug or an outage: logged, and answered without its message, which may quote SQL or
   * the driver (the SDK would otherwise hand `error.message` to the model).
   */
  const run = (tool: string, body: () => Promise<CallToolResult>) =>
    body().catch((error: unknown): CallToolResult => {
      if (error instanceof LedgerError) return refusal(error);
      log.error({ err: error, tool, principal: actor.name }, 'MCP tool failed');
      return {
        isError: true,
        content: [
          {
            type: 'text',
            text: `${tool} failed inside switchboard (the server log has the details). Try again later; if it keeps failing, tell your human.`,
          },
        ],
      };
    });
  const tokenFor = (id: number, given: string | undefined) => {
    const token = given ?? leases.get(id);
    if (!token)
      throw new LedgerError(
        'invalid',
        `no lease token for todo #${id} in this session: pass lease_token from your claim`,
      );
    return token;
  };
  const finished = (id: number) => leases.delete(id);

  server.registerTool(
    'list_todos',
    {
      description: 'List todos you can see, newest first (open ones unless state says otherwise).',
      inputSchema: INPUT.list_todos,
      annotations: { readOnlyHint: true },
    },
    (args) =>
      run('list_todos', async () => ok({ todos: (await listTodos(sql, actor, args)).map(listed) })),
  );

  server.registerTool(
    'get_todo',
    {
      description: 'Read one todo in full, with its history (who did what, when).',
      inputSchema: INPUT.get_todo,
      annotations: { readOnlyHint: true },
    },
    ({ todo_id }) => run('get_todo', async () => ok(await getTodoWithHistory(sql, actor, todo_id))),
  );

  server.registerTool(
    'claim_todo',
    {
      description:
        'Claim one todo by id. You hold it until the lease ends: heartbeat to keep it, then complete, fail or release it.',
      inputSchema: INPUT.claim_todo,
    },
    ({ todo_id, lease_seconds }) =>
      run('claim_todo', async () => {
        const todo = await claimTodo(sql, actor, todo_id, lease_seconds);
        leases.set(todo.id, todo.lease_token);
        return ok({ todo }, `claimed todo #${todo.id}`);
      }),
  );

  server.registerTool(
    'claim_next',
    {
      description:
        'Claim the oldest todo waiting on a queue, or get {"todo": null} when there is none.',
      inputSchema: INPUT.claim_next,
    },
    ({ queue, lease_seconds }) =>
      run('claim_next', async () => {
        const todo = await claimNextTodo(sql, actor, queue, lease_seconds);
        if (!todo) return ok({ todo: null }, `no pending todo on ${queue}`);
        leases.set(todo.id, todo.lease_token);
        return ok({ todo }, `claimed todo #${todo.id}`);
      }),
  );

  server.registerTool(
    'heartbeat_todo',
    {
      description: 'Extend your lease on a todo you are still working on.',
      inputSchema: INPUT.heartbeat_todo,
    },
    ({ todo_id, lease_token, lease_seconds }) =>
      run('heartbeat_todo', async () =>
        ok({
          todo: await heartbeatTodo(
            sql,
            actor,
            todo_id,
            tokenFor(todo_id, lease_token),
            lease_seconds,
          ),
        }),
      ),
  );

  server.registerTool(
    'complete_todo',
    {
      description: 'Report a todo you hold as done, with a summary and optionally any JSON result.',
      inputSchema: INPUT.complete_todo,
    },
    ({ todo_id, lease_token, summary, result }) =>
      run('complete_todo', async () => {
        const token = tokenFor(todo_id, lease_token);
        const { afterComplete } = hooks;
        const todo = await completeTodo(
          sql,
          actor,
          todo_id,
          token,
          { summary, result },
          afterComplete && ((tx, done) => afterComplete(tx, done, actor)),
        );
        finished(todo_id);
        return ok({ todo }, `completed todo #${todo_id}`);
      }),
  );

  server.registerTool(
    'fail_todo',
    {
      description:
        'Report that your attempt at a todo failed; it is retried later unless it used its last attempt.',
      inputSchema: INPUT.fail_todo,
    },
    ({ todo_id, lease_token, reason }) =>
      run('fail_todo', async () => {
        const todo = await failTodo(sql, actor, todo_id, tokenFor(todo_id, lease_token), reason);
        finished(todo_id);
        return ok({ todo });
      }),
  );

  server.registerTool(
    'release_todo',
    {
      description: 'Hand a todo you hold back, unfinished, for someone else to claim.',
      inputSchema: INPUT.release_todo,
    },
    ({ todo_id, lease_token }) =>
      run('release_todo', async () => {
        const todo = await releaseTodo(sql, actor, todo_id, tokenFor(todo_id, lease_token));
        finished(todo_id);
        return ok({ todo });
      }),
  );

  server.registerTool(
    'create_todo',
    {
      description:
        'Create a todo on one of your queues (e.g. a follow-up). With key, a second create while the first is open returns the first.',
      inputSchema: INPUT.create_todo,
    },
    (args) =>
      run('create_todo', async () => {
        const { announce } = hooks;
        const { todo, created } = await createTodo(
          sql,
          actor,
          { ...args, source: sourceOf(actor) },
          { announceWake: announce !== undefined },
        );
        if (created) announce?.([todo]);
        return ok(
          { todo, created },
          created ? `created todo #${todo.id}` : `todo #${todo.id} already exists with that key`,
        );
      }),
  );

  server.registerTool(
    'reply',
    {
      description:
        'Reply on a todo: the reply is kept in its history and, for GitHub todos, posted on the issue or pull request.',
      inputSchema: INPUT.reply,
    },
    ({ todo_id, text: reply }) =>
      run('reply', async () => {
        const replied = await sql.begin(async (tx) => {
          const result = await replyToTodo(tx, actor, todo_id, reply);
          await hooks.afterReply?.(tx, result.todo, result.text, actor);
          return result;
        });
        return ok({ todo_id: replied.todo.id, text: replied.text }, `replied on todo #${todo_id}`);
      }),
  );

  server.registerTool(
    'request_approval',
    {
      description:
        'Ask your human owner a yes/no question. It becomes an approval todo; read the verdict with get_todo (or wait for the verdict event).',
      inputSchema: INPUT.request_approval,
    },
    ({ question, body, todo_id, ttl_seconds }) =>
      run('request_approval', async () => {
        const todo = await requestApproval(sql, actor, {
          question,
          body,
          about_todo_id: todo_id,
          ttl_seconds,
          source: sourceOf(actor),
        });
        return ok({ todo }, `asked ${todo.assignee} (approval #${todo.id})`);
      }),
  );
}

function sourceOf(actor: Actor): 'mcp' | 'channel' {
  return actor.via === 'channel' ? 'channel' : 'mcp';
}

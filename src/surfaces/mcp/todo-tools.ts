import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type postgres from 'postgres';
import { databaseUnavailableHint, TODO_TOOLS } from '../../contract/todo-tools.js';
import { isDatabaseUnavailable } from '../../platform/db/is-database-unavailable.js';
import type { Actor } from '../../data/actor.js';
import { LedgerError, type LedgerErrorCode } from '../../data/ledger-error.js';
import { getTodoWithHistory } from '../../data/todos/get-todo.js';
import { listTodos } from '../../data/todos/list-todos.js';
import type { Todo } from '../../data/todos/todo.js';
import type { Logger } from '../../platform/logger.js';
import type { TodoService } from '../../todos/create-todo-service.js';

export interface ToolContext {
  /** For the ledger's reads. */
  sql: postgres.Sql;
  /** Every change, with its side effects (an announced wake, a write-back). */
  todos: TodoService;
  actor: Actor;
  log: Logger;
  /** Lease tokens this session got from its claims, so an agent need not carry them around. */
  leases: Map<number, string>;
}

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
  const { sql, todos, actor, leases, log } = context;
  /**
   * Runs a tool body; the ledger's refusals become `isError` results with a next step. Anything
   * else is a bug or an outage: logged, and answered without its message, which may quote SQL or
   * the driver (the SDK would otherwise hand `error.message` to the model).
   */
  const run = (tool: string, body: () => Promise<CallToolResult>) =>
    body().catch((error: unknown): CallToolResult => {
      if (error instanceof LedgerError) return refusal(error);
      if (isDatabaseUnavailable(error)) {
        log.warn(
          { code: (error as { code: string }).code, tool, principal: actor.name },
          'MCP tool failed: the database is not answering',
        );
        return {
          isError: true,
          content: [{ type: 'text', text: databaseUnavailableHint(tool) }],
        };
      }
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

  server.registerTool('list_todos', TODO_TOOLS.list_todos, (args) =>
    run('list_todos', async () => ok({ todos: (await listTodos(sql, actor, args)).map(listed) })),
  );

  server.registerTool('get_todo', TODO_TOOLS.get_todo, ({ todo_id }) =>
    run('get_todo', async () => ok(await getTodoWithHistory(sql, actor, todo_id))),
  );

  server.registerTool('claim_todo', TODO_TOOLS.claim_todo, ({ todo_id, lease_seconds }) =>
    run('claim_todo', async () => {
      const todo = await todos.claim(actor, todo_id, lease_seconds);
      leases.set(todo.id, todo.lease_token);
      return ok({ todo }, `claimed todo #${todo.id}`);
    }),
  );

  server.registerTool('claim_next', TODO_TOOLS.claim_next, ({ queue, lease_seconds }) =>
    run('claim_next', async () => {
      const { todo, held_back } = await todos.claimNext(actor, queue, lease_seconds);
      if (held_back) {
        return ok(
          { todo: null, held_back },
          `no claimable todo on ${queue}: ${held_back.message}. Call claim_next again at ${held_back.next_at.toISOString()} (or when a wake for ${queue} arrives); until then, work another queue.`,
        );
      }
      if (!todo) return ok({ todo: null }, `no pending todo on ${queue}`);
      leases.set(todo.id, todo.lease_token);
      return ok({ todo }, `claimed todo #${todo.id}`);
    }),
  );

  server.registerTool(
    'heartbeat_todo',
    TODO_TOOLS.heartbeat_todo,
    ({ todo_id, lease_token, lease_seconds }) =>
      run('heartbeat_todo', async () =>
        ok({
          todo: await todos.heartbeat(
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
    TODO_TOOLS.complete_todo,
    ({ todo_id, lease_token, summary, result }) =>
      run('complete_todo', async () => {
        const token = tokenFor(todo_id, lease_token);
        const todo = await todos.complete(actor, todo_id, token, { summary, result });
        finished(todo_id);
        return ok({ todo }, `completed todo #${todo_id}`);
      }),
  );

  server.registerTool('fail_todo', TODO_TOOLS.fail_todo, ({ todo_id, lease_token, reason }) =>
    run('fail_todo', async () => {
      const todo = await todos.fail(actor, todo_id, tokenFor(todo_id, lease_token), reason);
      finished(todo_id);
      return ok({ todo });
    }),
  );

  server.registerTool('release_todo', TODO_TOOLS.release_todo, ({ todo_id, lease_token }) =>
    run('release_todo', async () => {
      const todo = await todos.release(actor, todo_id, tokenFor(todo_id, lease_token));
      finished(todo_id);
      return ok({ todo });
    }),
  );

  server.registerTool('create_todo', TODO_TOOLS.create_todo, (args) =>
    run('create_todo', async () => {
      const { todo, created } = await todos.create(actor, args);
      return ok(
        { todo, created },
        created ? `created todo #${todo.id}` : `todo #${todo.id} already exists with that key`,
      );
    }),
  );

  server.registerTool('reply', TODO_TOOLS.reply, ({ todo_id, text: reply }) =>
    run('reply', async () => {
      const replied = await todos.reply(actor, todo_id, reply);
      return ok({ todo_id: replied.todo.id, text: replied.text }, `replied on todo #${todo_id}`);
    }),
  );

  server.registerTool('get_secret', TODO_TOOLS.get_secret, ({ secret_id }) =>
    run('get_secret', async () => {
      const secret = await todos.showSecret(actor, secret_id);
      return ok(
        { secret },
        `secret ${secret.id} of todo #${secret.todo_id} (${secret.rule}); this fetch is in the todo's history`,
      );
    }),
  );

  server.registerTool(
    'request_approval',
    TODO_TOOLS.request_approval,
    ({ question, body, todo_id, ttl_seconds }) =>
      run('request_approval', async () => {
        const todo = await todos.requestApproval(actor, {
          question,
          body,
          about_todo_id: todo_id,
          ttl_seconds,
        });
        return ok({ todo }, `asked ${todo.assignee} (approval #${todo.id})`);
      }),
  );
}

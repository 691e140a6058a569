/**
 * The MCP tools of DESIGN §5.4 as clients see them: names, descriptions, input schemas and
 * hints. /mcp (src/surfaces/mcp/todo-tools.ts) binds them to the ledger; the channel lists the same ones
 * and forwards calls to /mcp, so that a Claude Code session started while the server is down
 * still has its tools. Imports nothing of the server.
 */
import { z } from 'zod';
import { SECRET_ID } from './secret.js';
import { TODO_STATES } from './todo.js';

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

export interface TodoToolDefinition {
  description: string;
  inputSchema: z.ZodObject;
  annotations?: { readOnlyHint?: boolean };
}

const readOnly = { readOnlyHint: true };

/**
 * Built once for every session (a session only binds its principal to them). Unknown arguments
 * are refused, not dropped: a misspelt optional one would otherwise go unnoticed. None can
 * record a verdict.
 */
export const TODO_TOOLS = {
  list_todos: {
    description: 'List todos you can see, newest first (open ones unless state says otherwise).',
    inputSchema: z.strictObject({
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
    annotations: readOnly,
  },
  get_todo: {
    description: 'Read one todo in full, with its history (who did what, when).',
    inputSchema: z.strictObject({ todo_id: todoId }),
    annotations: readOnly,
  },
  claim_todo: {
    description:
      'Claim one todo by id. You hold it until the lease ends: heartbeat to keep it, then complete, fail or release it.',
    inputSchema: z.strictObject({ todo_id: todoId, lease_seconds: leaseSeconds }),
  },
  claim_next: {
    description:
      'Claim the oldest todo waiting on a queue, or get {"todo": null} when there is none. When the queue is at its limit (in flight, or claims an hour/day), {"todo": null, "held_back": {reason, next_at, message}} says when to call again.',
    inputSchema: z.strictObject({ queue, lease_seconds: leaseSeconds }),
  },
  heartbeat_todo: {
    description: 'Extend your lease on a todo you are still working on.',
    inputSchema: z.strictObject({
      todo_id: todoId,
      lease_token: leaseToken,
      lease_seconds: leaseSeconds,
    }),
  },
  complete_todo: {
    description: 'Report a todo you hold as done, with a summary and optionally any JSON result.',
    inputSchema: z.strictObject({
      todo_id: todoId,
      lease_token: leaseToken,
      summary: text('summary').optional(),
      result: result.optional(),
    }),
  },
  fail_todo: {
    description:
      'Report that your attempt at a todo failed; it is retried later unless it used its last attempt.',
    inputSchema: z.strictObject({
      todo_id: todoId,
      lease_token: leaseToken,
      reason: text('reason').optional(),
    }),
  },
  release_todo: {
    description: 'Hand a todo you hold back, unfinished, for someone else to claim.',
    inputSchema: z.strictObject({ todo_id: todoId, lease_token: leaseToken }),
  },
  create_todo: {
    description:
      'Create a todo on one of your queues (e.g. a follow-up). With key, a second create while the first is open returns the first.',
    inputSchema: z.strictObject({
      queue,
      title: text('title', 10_000),
      body: text('body').optional(),
      kind: z.string({ error: 'kind must be dotted words such as "followup.docs"' }).optional(),
      key: text('key', 200).optional().describe('Idempotency key.'),
      assignee: z.string({ error: 'assignee must be the name of an agent or human' }).optional(),
    }),
  },
  reply: {
    description:
      'Reply on a todo: the reply is kept in its history and, for GitHub todos, posted on the issue or pull request.',
    inputSchema: z.strictObject({ todo_id: todoId, text: text('text', 16_384) }),
  },
  get_secret: {
    description:
      'Read a credential withheld from a todo you can see, where its text says [secret:ID]. Fetch one only when the work needs it: each fetch is recorded in the todo’s history.',
    inputSchema: z.strictObject({
      secret_id: z
        .string({ error: 'secret_id must be the ID of a [secret:ID] in a todo' })
        .regex(SECRET_ID, {
          error:
            'secret_id must be the 12 characters of a [secret:ID] in a todo, e.g. k3j9x2m4q7ab',
        }),
    }),
  },
  request_approval: {
    description:
      'Ask your human owner a yes/no question. It becomes an approval todo; read the verdict with get_todo (or wait for the verdict event).',
    inputSchema: z.strictObject({
      question: text('question', 10_000),
      body: text('body').optional().describe('Details for the human.'),
      todo_id: todoId.optional().describe('The todo the question is about.'),
      ttl_seconds: z
        .number({ error: 'ttl_seconds must be a number of seconds' })
        .int({ error: 'ttl_seconds must be a whole number of seconds' })
        .min(1, { error: 'ttl_seconds must be at least 1' })
        .max(604_800, { error: 'ttl_seconds must be at most 604800 (7 days)' })
        .optional(),
    }),
  },
} satisfies Record<string, TodoToolDefinition>;

/**
 * A tool result's text when switchboard's database does not answer (on /mcp, and on the channel,
 * whose call /mcp refused for that reason). The call may have been cut off after its commit.
 */
export function databaseUnavailableHint(tool: string): string {
  return `switchboard's database is not answering right now, so ${tool} may not have taken effect. Try again in a minute (get_todo shows what did); if it keeps failing, tell your human.`;
}

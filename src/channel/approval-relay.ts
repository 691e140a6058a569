import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { ApiClient } from '../client/api-client.js';
import { ApiError } from '../client/client-errors.js';
import type { Doorbell } from '../contract/doorbell.js';
import { excerpt, neutraliseLine } from '../contract/neutralise-text.js';
import { databaseUnavailableHint, type TODO_TOOLS } from '../contract/todo-tools.js';
import {
  channelNotification,
  permissionVerdict,
  type PermissionRequest,
} from './channel-protocol.js';
import type { ChannelSession } from './channel-session.js';
import { tokenRefused, toolError, unreachable } from './tool-errors.js';

export type QuestionArgs = z.infer<(typeof TODO_TOOLS)['request_approval']['inputSchema']>;

const INPUT_PREVIEW_MAX = 4000;
const TOOL_NAME_MAX = 200;
const DESCRIPTION_MAX = 2000;

type VerdictDoorbell = Extract<Doorbell, { type: 'verdict' }>;

export interface ApprovalRelay {
  /** request_approval, answered here, so that its verdict comes back to this session only. */
  ask(args: QuestionArgs): Promise<CallToolResult>;
  /** Claude Code's permission prompt becomes an approval todo for the agent's human. */
  relayPermission(request: PermissionRequest): Promise<void>;
  /**
   * What a verdict becomes for Claude Code: the answer to a relayed prompt, a `verdict` event
   * for a question of this session's, or nothing (another session's question).
   */
  verdict(doorbell: VerdictDoorbell): { method: string; params: object } | undefined;
}

/**
 * The approvals this channel asks for, both ways: permission prompts and the session's own
 * questions go to the server as approvals that end with the channel's session, and their
 * verdicts come back to whoever asked.
 */
export function createApprovalRelay(options: {
  api: ApiClient;
  base: string;
  session: ChannelSession;
  /** How long a relayed permission prompt waits for a human before it is canceled. */
  approvalTtlSeconds: number;
  /** The todo the session works on, which a permission prompt is about. */
  heldTodo: () => number | undefined;
  log: (message: string) => void;
}): ApprovalRelay {
  const { api, base, session, log } = options;
  // Approval id → Claude's request id, for prompts; and this session's own questions.
  const permissionPrompts = new Map<number, string>();
  const questions = new Set<number>();

  return {
    async ask({ question, body, todo_id, ttl_seconds }) {
      let answer: Awaited<ReturnType<ApiClient['requestApproval']>>;
      try {
        answer = await api.requestApproval({
          question,
          body,
          about_todo_id: todo_id,
          ttl_seconds,
          channel_session: await session.current(),
        });
      } catch (error) {
        log(`tool request_approval failed: ${JSON.stringify(String(error).slice(0, 300))}`);
        if (!(error instanceof ApiError)) return unreachable(base);
        if (error.code === 'database_unavailable')
          return toolError(databaseUnavailableHint('request_approval'));
        if (error.status === 401 || error.status === 403) return tokenRefused(base, error.status);
        if (error.status >= 500)
          return toolError(
            'request_approval failed inside switchboard (the server log has the details). Try again later; if it keeps failing, tell your human.',
          );
        return toolError(
          `${neutraliseLine(error.message, 300)}. Fix the arguments and call again.`,
        );
      }
      const { todo } = answer;
      questions.add(todo.id);
      return {
        content: [
          {
            type: 'text',
            text: `asked ${todo.assignee} (approval #${todo.id}); the verdict arrives as a channel event\n${JSON.stringify(answer)}`,
          },
        ],
        structuredContent: answer as unknown as Record<string, unknown>,
      };
    },

    async relayPermission(params) {
      try {
        const { todo } = await api.requestApproval({
          // Cut before sending: the human sees a one-line title of 200 characters anyway, and an
          // over-long question would be refused, leaving the prompt unrelayed.
          question: `Claude Code wants to use ${excerpt(params.tool_name, TOOL_NAME_MAX)}: ${excerpt(params.description, DESCRIPTION_MAX)}`,
          body: excerpt(params.input_preview, INPUT_PREVIEW_MAX),
          request_id: params.request_id,
          about_todo_id: options.heldTodo(),
          ttl_seconds: options.approvalTtlSeconds,
          channel_session: await session.current(),
        });
        permissionPrompts.set(todo.id, params.request_id);
      } catch (error) {
        // The terminal dialog is still open: the human can answer there.
        log(`could not relay permission request ${params.request_id}: ${String(error)}`);
      }
    },

    verdict(doorbell) {
      const requestId = permissionPrompts.get(doorbell.todo_id);
      if (requestId) {
        permissionPrompts.delete(doorbell.todo_id);
        return permissionVerdict(requestId, doorbell.verdict);
      }
      if (!questions.delete(doorbell.todo_id)) return undefined; // another session's question
      return channelNotification({
        content: doorbell.content,
        meta: {
          event: 'verdict',
          todo_id: doorbell.todo_id,
          verdict: doorbell.verdict,
          decided_by: doorbell.decided_by,
          about_todo_id: doorbell.about_todo_id,
        },
      });
    },
  };
}

import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** A tool call's refusal, as the model reads it: what happened and what to do next. */
export function toolError(text: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text }] };
}

/** The server could not be reached: nothing changed, and the same call works once it is back. */
export function unreachable(base: string): CallToolResult {
  return toolError(
    `switchboard at ${base} cannot be reached right now; nothing changed. Try again in a minute.`,
  );
}

/** The server refused the channel's token (401, 403): only the human can mend that. */
export function tokenRefused(base: string, status: number): CallToolResult {
  return toolError(
    `switchboard at ${base} refused this channel's token (HTTP ${status}); nothing changed. Ask your human to check SWITCHBOARD_TOKEN.`,
  );
}

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { neutraliseLine } from '../contract/neutralise-text.js';
import { databaseUnavailableHint } from '../contract/todo-tools.js';
import { tokenRefused, toolError, unreachable } from './tool-errors.js';

export interface ToolProxy {
  /** Forwards a call, its arguments already checked here against the same schema as /mcp's. */
  forward(name: string, args: Record<string, unknown>): Promise<CallToolResult>;
  /** The todo this session claimed last and still holds: a permission prompt is about it. */
  heldTodo(): number | undefined;
  /** Ends the remote session on its own time (the server expires it). */
  close(): void;
}

/**
 * The channel's tools, each call forwarded to the server's /mcp with the agent's token, over one
 * MCP session opened on first use and opened again after it is lost. A server that cannot be
 * reached is a tool error saying so; one that refuses says why.
 */
export function createToolProxy(options: {
  base: string;
  token: string;
  version: string;
  log: (message: string) => void;
}): ToolProxy {
  const { base, token, log } = options;
  let remote: Promise<Client> | undefined;
  const connectRemote = () =>
    (remote ??= (async () => {
      const client = new Client({ name: 'switchboard-channel', version: options.version });
      const transport = new StreamableHTTPClientTransport(new URL('/mcp', base), {
        requestInit: {
          headers: { authorization: `Bearer ${token}`, 'x-switchboard-client': 'channel' },
        },
      });
      client.onclose = () => (remote = undefined);
      await client.connect(transport);
      return client;
    })().catch((error: unknown) => {
      remote = undefined;
      throw error;
    }));

  /**
   * The server was reached and said no (a 4xx): not a reason to try again in a minute. Or it
   * said that its database is not answering (503 database_unavailable): then it is.
   */
  const refused = (tool: string, error: unknown): CallToolResult | undefined => {
    if (!(error instanceof StreamableHTTPError)) return undefined;
    const status = error.code;
    // The SDK keeps the body of the refusal in the message: the API's {error, code}.
    if (status === 503 && error.message.includes('"code":"database_unavailable"'))
      return toolError(databaseUnavailableHint(tool));
    if (status === undefined || status < 400 || status >= 500) return undefined;
    if (status === 401 || status === 403) return tokenRefused(base, status);
    return toolError(
      `switchboard refused the call (HTTP ${status}${reasonOf(error.message)}); nothing changed. Fix the arguments and call again.`,
    );
  };

  // The todos this session holds, newest claim last.
  const held = new Set<number>();
  const noteHeld = (name: string, args: Record<string, unknown>, result: CallToolResult) => {
    if (result.isError) return;
    const claimed = (result.structuredContent as { todo?: { id?: unknown } | null } | undefined)
      ?.todo?.id;
    if ((name === 'claim_todo' || name === 'claim_next') && typeof claimed === 'number') {
      held.delete(claimed);
      held.add(claimed);
    }
    if (['complete_todo', 'fail_todo', 'release_todo'].includes(name))
      held.delete(args.todo_id as number);
  };

  return {
    async forward(name, args) {
      try {
        const result = (await (
          await connectRemote()
        ).callTool({ name, arguments: args })) as CallToolResult;
        noteHeld(name, args, result);
        return result;
      } catch (error) {
        log(`tool ${name} failed: ${JSON.stringify(String(error).slice(0, 300))}`);
        return refused(name, error) ?? unreachable(base);
      }
    },
    heldTodo: () => [...held].at(-1),
    close() {
      void remote?.then((client) => client.close()).catch(() => {});
    },
  };
}

/** `: why`, from the JSON-RPC error a refusing server sent, if there is one to read. */
function reasonOf(message: string): string {
  const quoted = /"message":("(?:[^"\\]|\\.)*")/.exec(message)?.[1];
  if (quoted === undefined) return '';
  try {
    return `: ${neutraliseLine(JSON.parse(quoted) as string, 200)}`;
  } catch {
    return '';
  }
}

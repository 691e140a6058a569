import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { MAX_BATCH_SIZE } from '@modelcontextprotocol/sdk/server/requestBody.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * The SDK's Streamable HTTP server transport for one POST answered in plain JSON, without its
 * detour through Web `Request` and `Response` objects.
 *
 * The SDK's Node transport (`StreamableHTTPServerTransport`) converts every request into a Web
 * `Request` and its answer back through `@hono/node-server`, about a fifth of the server's CPU per
 * MCP call here. This speaks the same protocol for the only way /mcp answers a POST — stateless to
 * the SDK (src/surfaces/mcp/mcp-endpoint.ts keeps the sessions), JSON responses rather than a stream per
 * request — with the SDK's own schemas and rules, refusal for refusal: 406 without an Accept of
 * both JSON and event streams, 415 for a body not declared JSON, 400 for a batch over the SDK's
 * limit, a message that is not JSON-RPC, two initializations in one batch or an unsupported
 * `Mcp-Protocol-Version`; 202 for notifications and responses alone. One transport per request.
 */
export class JsonResponseTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  /** The requests of this POST, answered or not yet (null). */
  private readonly answers = new Map<RequestId, JSONRPCMessage | null>();
  private answer?: (messages: JSONRPCMessage[]) => void;

  async start(): Promise<void> {}

  close(): Promise<void> {
    this.answer = undefined;
    this.onclose?.();
    return Promise.resolve();
  }

  /**
   * A response settles its request; when every request of the POST is settled, they are its
   * answer. Anything else — a notification about a request (progress, a log line) or from the
   * server — has no way to a client answered in JSON, and is dropped, as the SDK drops it.
   */
  send(message: JSONRPCMessage): Promise<void> {
    if (!isJSONRPCResultResponse(message) && !isJSONRPCErrorResponse(message))
      return Promise.resolve();
    const { id } = message;
    if (id === undefined || !this.answers.has(id))
      return Promise.reject(new Error(`No connection established for request ID: ${String(id)}`));
    this.answers.set(id, message);
    const all = [...this.answers.values()];
    if (all.every((answer) => answer !== null)) this.answer?.(all);
    return Promise.resolve();
  }

  /** Answers one POST whose body was read into `body`. */
  async handle(
    req: IncomingMessage & { auth?: AuthInfo },
    res: ServerResponse,
    body: unknown,
  ): Promise<void> {
    const refuse = (status: number, code: number, message: string) => {
      this.onerror?.(new Error(message));
      writeJson(res, status, { jsonrpc: '2.0', error: { code, message }, id: null });
    };
    const accept = req.headers.accept;
    if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) {
      return refuse(
        406,
        -32000,
        'Not Acceptable: Client must accept both application/json and text/event-stream',
      );
    }
    if (!isJsonContentType(req.headers['content-type'])) {
      return refuse(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
    }
    if (Array.isArray(body) && body.length > MAX_BATCH_SIZE) {
      return refuse(
        400,
        -32600,
        `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`,
      );
    }
    let messages: JSONRPCMessage[];
    try {
      messages = (Array.isArray(body) ? body : [body]).map((m) => JSONRPCMessageSchema.parse(m));
    } catch {
      return refuse(400, -32700, 'Parse error: Invalid JSON-RPC message');
    }
    if (messages.some(isInitializeRequest)) {
      if (messages.length > 1)
        return refuse(400, -32600, 'Invalid Request: Only one initialization request is allowed');
    } else {
      const version = req.headers['mcp-protocol-version'];
      if (typeof version === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
        return refuse(
          400,
          -32000,
          `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
        );
      }
    }
    const extra = { authInfo: req.auth, requestInfo: { headers: req.headers } };
    const requests = messages.filter(isJSONRPCRequest);
    if (requests.length === 0) {
      for (const message of messages) this.onmessage?.(message, extra);
      res.writeHead(202).end();
      return;
    }
    const answered = new Promise<JSONRPCMessage[]>((resolve) => (this.answer = resolve));
    for (const request of requests) this.answers.set(request.id, null);
    for (const message of messages) this.onmessage?.(message, extra);
    const answers = await answered;
    writeJson(res, 200, answers.length === 1 ? answers[0] : answers);
  }
}

function writeJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res
    .writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
    })
    .end(text);
}

import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** What the endpoint answers one hook request with. */
export interface HookAnswer {
  status?: number;
  /** The response body: JSON of `json`, or `text` as is; empty when neither. */
  json?: unknown;
  text?: string;
  afterMs?: number;
  /** Answers only once this resolves (after afterMs). */
  until?: () => Promise<unknown>;
}

/** A `PermissionRequest` hook's decision, in the shape Claude Code's hooks reference gives. */
export const hookDecision = (decision: Record<string, unknown>): HookAnswer => ({
  json: { hookSpecificOutput: { hookEventName: 'PermissionRequest', decision } },
});

export interface HookRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
  /** When it arrived: ms after the endpoint started, and the epoch time (to order it against others). */
  ms: number;
  at: number;
  /** Whether the answer was written whole, and whether Claude Code hung up before it. */
  answered: boolean;
  abandoned: boolean;
}

export interface HookEndpoint {
  url: string;
  requests: HookRequest[];
  stop(): Promise<void>;
}

/**
 * An endpoint for Claude Code's `type: "http"` hooks on a loopback port, answering `answers` in
 * turn (the last one from then on) and recording every request. It runs in the test's process:
 * the harness starts Claude Code asynchronously, so this event loop stays free to answer.
 */
export async function startHookEndpoint(answers: HookAnswer[]): Promise<HookEndpoint> {
  const requests: HookRequest[] = [];
  const started = Date.now();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const request: HookRequest = {
        ...{ method: req.method ?? '', path: req.url ?? '', headers: req.headers },
        body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
        ...{ ms: Date.now() - started, at: Date.now(), answered: false, abandoned: false },
      };
      requests.push(request);
      res.on('close', () => {
        request.answered = res.writableFinished;
        request.abandoned = !res.writableFinished;
      });
      const answer = answers[Math.min(requests.length - 1, answers.length - 1)] ?? {};
      void sleep(answer.afterMs ?? 0)
        .then(() => answer.until?.())
        .then(() => {
          if (res.destroyed) return;
          const body =
            answer.text ?? (answer.json === undefined ? '' : JSON.stringify(answer.json));
          res.writeHead(answer.status ?? 200, { 'content-type': 'application/json' });
          res.end(body);
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/permission-request`,
    requests,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** `--settings` with one `PermissionRequest` hook of type http to `url` for `matcher`. */
export function permissionRequestHook(
  url: string,
  hook: Record<string, unknown> = {},
  matcher = 'Bash',
): Record<string, unknown> {
  return {
    hooks: { PermissionRequest: [{ matcher, hooks: [{ type: 'http', url, ...hook }] }] },
  };
}

import type { IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Credentials } from './api-client.js';
import { ApiError, ConnectionError } from './client-errors.js';
import { isServerOutage } from './is-server-outage.js';
import { retryDelay } from './retry-delay.js';
import { openRequest } from './send-request.js';

/**
 * The server's wakes for one queue (or for all the caller's, without one), read from
 * `GET /api/v1/events`, as a doorbell: it counts rings (the stream said `ready` after a connect
 * or reconnect, or a wake arrived) and lets a claimer wait for the next one. The correct use — wait for `ready`, claim, and on every ring
 * claim again — cannot miss a todo: one committed before `ready` is found by the claim, one
 * committed after it rings.
 *
 * A server without the stream (404) makes every wait a poll with backoff instead.
 */
export interface WakeStream {
  /**
   * The stream is listening (or the server has none). Rejects when the first connect fails —
   * with `onWaiting`, only when it is refused (401, 403, …): a server that is down is waited for.
   */
  ready: Promise<void>;
  /** True once `ready`; false at `deadline` or on `signal`, still waiting for the server. */
  waitReady(options: WaitOptions): Promise<boolean>;
  /** Why the stream is not listening yet, while it waits for the server. */
  readonly problem: Error | undefined;
  /** How many times it rang so far: read it before claiming, then wait past it. */
  readonly rings: number;
  /** Whether the server has no event stream, so that waits are polls. */
  readonly polling: boolean;
  /**
   * True once it rang more than `seen` times (without a stream: once the next poll is due,
   * later for a higher `attempt`); false at `deadline` (ms since the epoch) or on `signal`.
   */
  waitPast(seen: number, options: WaitOptions): Promise<boolean>;
  close(): void;
}

export interface WaitOptions {
  deadline: number;
  /** How many waits in a row found nothing: a poll backs off from 250 ms to 5 s. */
  attempt?: number;
  signal?: AbortSignal | undefined;
}

export interface WakeStreamOptions {
  /**
   * Also ring whenever the ledger may have changed (`?changes=1`): for a view of what waits
   * (`inbox --watch`), which must show a verdict or a claim made elsewhere. Such a stream is
   * rung for no claimable todo: it watches, it never claims.
   */
  changes?: boolean;
  /**
   * Wait for a server that cannot be reached (or fails, 5xx) at the first connect, rather than
   * fail `ready`: under a supervisor, a worker may well start before its server. Called once,
   * with why, when the waiting starts.
   */
  onWaiting?: (problem: Error) => void;
}

/** Three missed pings (sent every 15 s): the connection is dead, however quiet it looks. */
const SILENCE_MS = 45_000;
const POLL_MIN_MS = 250;
const POLL_MAX_MS = 5000;

export function openWakeStream(
  credentials: Credentials,
  queue?: string,
  options: WakeStreamOptions = {},
): WakeStream {
  const closed = new AbortController();
  const waiters = new Set<(rang: boolean) => void>();
  let rings = 0;
  let polling = false;
  const ring = () => {
    rings++;
    for (const wake of [...waiters]) wake(true);
  };

  let markReady!: () => void;
  let failReady!: (error: unknown) => void;
  let isReady = false;
  let problem: Error | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    markReady = () => {
      isReady = true;
      resolve();
    };
    failReady = reject;
  });
  // Whoever waits on `ready` sees the failure; nobody waiting is no crash.
  ready.catch(() => {});

  const url = new URL(`${credentials.url.replace(/\/+$/, '')}/api/v1/events`);
  if (queue !== undefined) url.searchParams.set('queue', queue);
  if (options.changes) url.searchParams.set('changes', '1');
  const listen = async () => {
    for (let failures = 0; !closed.signal.aborted; failures++) {
      try {
        const response = await openRequest(url, {
          method: 'GET',
          headers: {
            authorization: `Bearer ${credentials.token}`,
            'x-switchboard-client': 'cli',
            accept: 'text/event-stream',
          },
          timeoutMs: SILENCE_MS,
          signal: closed.signal,
        });
        if (response.statusCode === 404) {
          response.resume();
          polling = true;
          markReady();
          return;
        }
        if (response.statusCode !== 200) throw await refusal(response);
        for await (const event of readEvents(response, url)) {
          if (event === 'ready') {
            failures = 0;
            problem = undefined;
            markReady();
            ring();
          } else if (event === 'wake' || event === 'change') {
            ring();
          }
        }
        if (!isReady)
          throw new ConnectionError(`${url.origin} ended the event stream before it was ready`);
      } catch (error) {
        if (closed.signal.aborted) return;
        if (!isReady) {
          if (!options.onWaiting || !isServerOutage(error)) return failReady(error);
          if (!problem) options.onWaiting(error as Error);
          problem = error as Error;
        }
      }
      // Not there yet, or the stream ended or broke after it had worked: connect again, and
      // ring on the next `ready`.
      await sleep(retryDelay(failures), undefined, { signal: closed.signal }).catch(() => {});
    }
  };
  void listen();

  return {
    ready,
    get rings() {
      return rings;
    },
    get polling() {
      return polling;
    },
    get problem() {
      return problem;
    },
    waitReady({ deadline, signal }) {
      if (isReady) return Promise.resolve(true);
      return new Promise<boolean>((resolve, reject) => {
        const finish = (outcome: boolean | Error) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          if (outcome instanceof Error) reject(outcome);
          else resolve(outcome);
        };
        const onAbort = () => finish(false);
        const left = deadline - Date.now();
        const timer = Number.isFinite(left)
          ? setTimeout(() => finish(false), Math.max(0, left))
          : undefined;
        if (signal?.aborted) return finish(false);
        signal?.addEventListener('abort', onAbort, { once: true });
        ready.then(
          () => finish(true),
          (error: unknown) => finish(error instanceof Error ? error : new Error(String(error))),
        );
      });
    },
    async waitPast(seen, { deadline, attempt = 0, signal }) {
      if (!polling && rings > seen) return true;
      const left = deadline - Date.now();
      if (left <= 0 || signal?.aborted) return false;
      const pollMs = Math.min(POLL_MAX_MS, POLL_MIN_MS * 2 ** attempt);
      return new Promise<boolean>((resolve) => {
        const finish = (rang: boolean) => {
          waiters.delete(finish);
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(rang);
        };
        const onAbort = () => finish(false);
        // A deadline of Infinity (the worker) must not reach setTimeout, which would fire at once.
        const timer =
          polling || Number.isFinite(left)
            ? setTimeout(
                () => finish(polling && pollMs < left),
                polling ? Math.min(pollMs, left) : left,
              )
            : undefined;
        if (!polling) waiters.add(finish);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
    close() {
      closed.abort();
      for (const wake of [...waiters]) wake(false);
    },
  };
}

async function refusal(response: IncomingMessage): Promise<ApiError> {
  response.setEncoding('utf8');
  let text = '';
  for await (const chunk of response) text += chunk as string;
  let body: { error?: unknown; code?: unknown } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    // Not the API's JSON: the status says enough.
  }
  return new ApiError(
    response.statusCode ?? 0,
    typeof body.code === 'string' ? body.code : `http_${response.statusCode}`,
    typeof body.error === 'string'
      ? body.error
      : `the event stream answered HTTP ${response.statusCode}`,
  );
}

/** The event names of a server-sent-events body, one per event; comments (pings) are skipped. */
async function* readEvents(response: IncomingMessage, url: URL): AsyncGenerator<string> {
  response.setEncoding('utf8');
  let buffer = '';
  try {
    for await (const chunk of response) {
      // The server ends lines with \n; a \r (allowed by the SSE spec) is dropped.
      buffer += (chunk as string).replace(/\r/g, '');
      for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const name = /^event:\s?(.*)$/m.exec(block)?.[1];
        if (name) yield name;
      }
    }
  } catch (error) {
    if ((error as Error).name === 'AbortError') throw error;
    // A server that goes away mid-stream (restarting) is an outage, like a refused connect.
    throw new ConnectionError(`${url.origin} closed the event stream`);
  }
}

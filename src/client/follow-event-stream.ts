import type { IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Credentials } from './api-client.js';
import { ApiError, ConnectionError } from './client-errors.js';
import { readServerSentEvents } from './read-server-sent-events.js';
import { parseRetryAfter, retryDelay } from './retry-delay.js';
import { openRequest } from './send-request.js';

/** Three missed pings (sent every 15 s): the connection is dead, however quiet it looks. */
const SILENCE_MS = 45_000;

export interface FollowOptions {
  credentials: Credentials;
  /** The query of `GET /api/v1/events`: `queue`, `changes`, `consumer`. */
  query?: Record<string, string | undefined>;
  /** Who is asking, for the ledger's `via` (X-Switchboard-Client). */
  client: 'cli' | 'channel';
  /** Stops following: the request in flight is aborted, no other is made. */
  signal: AbortSignal;
  /** Each event the stream sends (`ready` once it is attached, then `wake`, `digest`, …). */
  onEvent(event: string, data: string): void;
  /**
   * The stream could not be opened, was refused (an ApiError with the server's status and
   * reason), fell silent, broke, or ended. Answer false to stop following; else it connects again
   * after a pause that grows with `failures` (counted since the last `ready`).
   */
  onLost(error: Error, failures: number): boolean;
  /** The longest pause between two connects (5 s). */
  maxDelayMs?: number;
  /** Tests: how long a silent stream is trusted (45 s). */
  silenceMs?: number;
}

/**
 * Follows the server's event stream for as long as it is wanted: connects, hands over each
 * event, and when the stream is lost connects again with backoff. A stream that says nothing for
 * 45 s (not even a ping) is taken for dead and replaced: a connection that died without a word
 * (a machine asleep, a NAT that forgot it) is noticed.
 */
export async function followEventStream(options: FollowOptions): Promise<void> {
  const { credentials, signal } = options;
  const url = new URL(`${credentials.url.replace(/\/+$/, '')}/api/v1/events`);
  for (const [name, value] of Object.entries(options.query ?? {}))
    if (value !== undefined) url.searchParams.set(name, value);
  for (let failures = 0; !signal.aborted; failures++) {
    let lost: Error;
    try {
      const response = await openRequest(url, {
        method: 'GET',
        headers: {
          authorization: `Bearer ${credentials.token}`,
          'x-switchboard-client': options.client,
          accept: 'text/event-stream',
        },
        timeoutMs: options.silenceMs ?? SILENCE_MS,
        signal,
      });
      if (response.statusCode !== 200) throw await refusal(response);
      let attached = false;
      for await (const { event, data } of eventsOf(response, url)) {
        if (event === 'ready') {
          attached = true;
          failures = 0;
        }
        options.onEvent(event, data);
      }
      lost = new ConnectionError(
        `${url.origin} ended the event stream${attached ? '' : ' before it was ready'}`,
      );
    } catch (error) {
      if (signal.aborted) return;
      lost = error instanceof Error ? error : new Error(String(error));
    }
    if (!options.onLost(lost, failures)) return;
    await sleep(retryDelay(failures, options.maxDelayMs, lost), undefined, { signal }).catch(
      () => {},
    );
  }
}

/** The events of a response; a server that goes away mid-stream (restarting) is an outage. */
async function* eventsOf(response: IncomingMessage, url: URL) {
  try {
    yield* readServerSentEvents(response);
  } catch (error) {
    if ((error as Error).name === 'AbortError') throw error;
    throw new ConnectionError(`${url.origin} closed the event stream`);
  }
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
    parseRetryAfter(response.headers['retry-after']),
  );
}

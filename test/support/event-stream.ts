import { readServerSentEvents } from '../../src/client/read-server-sent-events.js';

export interface StreamEvent {
  event: string;
  data: any;
}

export interface EventStreamClient {
  events: StreamEvent[];
  /** Waits until an event matches (or `timeoutMs` passes, which fails the test). */
  waitFor(match: (event: StreamEvent) => boolean, timeoutMs?: number): Promise<StreamEvent>;
  /** The `wake` events' payloads so far. */
  wakes(): any[];
  /** Resolves when the stream ended (the server closed it, or close() was called). */
  ended: Promise<void>;
  close(): void;
}

/** Opens GET /api/v1/events as `token` and collects its events; resolves once `ready` arrived. */
export async function openEventStream(
  baseUrl: string,
  token: string,
  query = '',
): Promise<EventStreamClient> {
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/api/v1/events${query}`, {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal,
  });
  if (response.status !== 200) throw new Error(`event stream answered ${response.status}`);
  const events: StreamEvent[] = [];
  const waiters = new Set<() => void>();
  const ended = (async () => {
    try {
      for await (const { event, data } of readServerSentEvents(response.body!)) {
        events.push({ event, data: JSON.parse(data) });
        for (const wake of waiters) wake();
      }
    } catch {
      // aborted
    }
  })();
  const client: EventStreamClient = {
    events,
    async waitFor(match, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = events.find(match);
        if (found) return found;
        if (Date.now() > deadline)
          throw new Error(`no matching event within ${timeoutMs} ms: ${JSON.stringify(events)}`);
        await new Promise<void>((resolve) => {
          const done = () => {
            waiters.delete(done);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(done, 50);
          waiters.add(done);
        });
      }
    },
    wakes: () => events.filter((e) => e.event === 'wake').map((e) => e.data),
    ended,
    close: () => controller.abort(),
  };
  await client.waitFor((e) => e.event === 'ready');
  return client;
}

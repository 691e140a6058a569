import { request, type IncomingMessage } from 'node:http';
import { createParser } from 'eventsource-parser';

export interface SseStream {
  /** Ends the stream (the server sees the connection close). */
  close(): void;
}

/**
 * Opens GET /api/v1/events as `token` over plain node:http (no fetch/Web Streams layers, so the
 * time an event is seen is the time its bytes were read) and calls `onEvent` for every event.
 * Resolves once the server said `ready`, i.e. once the stream is attached as a consumer.
 */
export function openSseStream(
  baseUrl: string,
  token: string,
  onEvent: (event: string, data: string) => void = () => {},
): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const req = request(new URL('/api/v1/events', baseUrl), {
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    });
    const stream: SseStream = { close: () => req.destroy() };
    let ready = false;
    req.once('error', (error) => {
      if (!ready) reject(error);
    });
    req.once('response', (res: IncomingMessage) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`event stream answered ${res.statusCode}`));
        return;
      }
      const parser = createParser({
        onEvent({ event, data }) {
          if (event === undefined) return;
          if (event === 'ready' && !ready) {
            ready = true;
            resolve(stream);
          }
          onEvent(event, data);
        },
      });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => parser.feed(chunk));
      res.on('error', () => {}); // a closed stream; the benchmark notices missing events itself
    });
    req.end();
  });
}

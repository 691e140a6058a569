import type { ServerResponse } from 'node:http';

/** A comment this often, so that no proxy takes a quiet stream for a dead one. */
const PING_MS = 15_000;

/** One open server-sent-events response. */
export interface EventStream {
  /** The client is still there and the stream was not ended. */
  readonly open: boolean;
  /** Writes one event; false (and nothing written) once the stream is gone. */
  send(event: string, data: string): boolean;
  /** Ends the stream; the client sees it close. */
  end(): void;
}

export interface EventStreamOptions {
  /** How soon a browser whose stream dropped tries again (the SSE `retry` field). */
  retryMs?: number;
  /** Called once when the stream closes, whichever side closed it. */
  onClose?: () => void;
}

/** The open event streams of one endpoint. */
export interface EventStreams {
  /** Answers `res` with a stream (status 200 and its headers at once), pinged until it closes. */
  open(res: ServerResponse, options?: EventStreamOptions): EventStream;
  /** How many are open. */
  size(): number;
  /** Ends every open stream, so that a closing server is not held open by them. */
  closeAll(): void;
}

/**
 * Server-sent events as every endpoint writes them (the API's `/events`, MCP's notification
 * stream, the console's `/live`): one set of headers, a ping, and events whose data may span
 * lines. Each endpoint keeps its own set, so that it can end its own streams.
 */
export function createEventStreams(): EventStreams {
  const open = new Set<EventStream>();
  return {
    open(res, options = {}) {
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        // A stream's connection is never reused: it closes with the stream (so a stopping server
        // is not kept waiting for the client's idle keep-alive socket).
        connection: 'close',
        'x-accel-buffering': 'no',
      });
      res.flushHeaders();
      if (options.retryMs !== undefined) res.write(`retry: ${options.retryMs}\n\n`);
      const stream: EventStream = {
        get open() {
          return !res.writableEnded && !res.destroyed;
        },
        send(event, data) {
          if (!stream.open) return false;
          // Every line break (CR, LF or both, as SSE reads them) starts another data line.
          const lines = data.split(/\r\n|\r|\n/);
          res.write(`event: ${event}\n${lines.map((line) => `data: ${line}`).join('\n')}\n\n`);
          return true;
        },
        end: () => res.end(),
      };
      const ping = setInterval(() => {
        if (stream.open) res.write(': ping\n\n');
      }, PING_MS);
      open.add(stream);
      res.once('close', () => {
        clearInterval(ping);
        open.delete(stream);
        options.onClose?.();
      });
      return stream;
    },
    size: () => open.size,
    closeAll() {
      for (const stream of open) stream.end();
    },
  };
}

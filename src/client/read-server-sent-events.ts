import { createParser } from 'eventsource-parser';

export interface ServerSentEvent {
  /** The event's name; `message` when the server gave none (as a browser's EventSource says). */
  event: string;
  data: string;
}

/**
 * The events of a server-sent-events body, in order, as its bytes arrive (a node:http response
 * or a fetch body alike). eventsource-parser reads the lines: a line ends at LF, CR or CRLF only,
 * so JSON carrying U+2028 or U+2029 unescaped stays one line. Comments (pings) are skipped.
 */
export async function* readServerSentEvents(
  body: AsyncIterable<Uint8Array | string>,
): AsyncGenerator<ServerSentEvent> {
  const parsed: ServerSentEvent[] = [];
  const parser = createParser({
    onEvent: ({ event, data }) => parsed.push({ event: event ?? 'message', data }),
  });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
    yield* parsed.splice(0);
  }
}

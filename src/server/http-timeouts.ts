import type { ServerOptions } from 'node:http';

export interface HttpTimeouts {
  /** A request's headers arrive within this, or it is answered 408 and its connection closed. */
  headersTimeout: number;
  /** A request's headers and body arrive within this (408 otherwise). */
  requestTimeout: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeout: number;
  /** How often connections are checked against the two timeouts above. */
  connectionsCheckingInterval: number;
}

/**
 * A client that sends its request slowly holds a socket, and a webhook's body holds its share of
 * the budget of unverified bodies, for as long as it takes: no request may take long to arrive.
 * GitHub gives up on a delivery after 10 s, and an API body is at most 2 MB, so 30 s is ample.
 * Only the request's arrival is timed: a response may last, and the event streams (the API's
 * /events, MCP's notification stream, the console's /live), whose GET arrived at once, stay
 * open as long as their clients keep them.
 */
export const HTTP_TIMEOUTS: HttpTimeouts = {
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  // Longer than the idle timeout of the proxies usually put in front (60 s: nginx, AWS ALB), so
  // that the proxy closes an idle connection first and never sends a request on one being closed.
  keepAliveTimeout: 65_000,
  // Node checks every 30 s by default, which would let a slow request run 30 s over its timeout.
  connectionsCheckingInterval: 1000,
};

/** The options of node:http's createServer that set them. */
export function httpServerOptions(overrides: Partial<HttpTimeouts> = {}): ServerOptions {
  return { ...HTTP_TIMEOUTS, ...overrides };
}

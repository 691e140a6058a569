/**
 * The ways postgres.js reports that PostgreSQL is not answering, as opposed to refusing a
 * statement: the socket could not be opened or was lost (Node's codes, and postgres.js's own
 * CONNECTION_* and CONNECT_TIMEOUT), or the server said it is going away or not yet accepting
 * connections (SQLSTATE class 08, 57P01–57P03, 53300). A query that fails this way may be
 * retried once the database is back; nothing about the request itself was wrong.
 */
const NOT_ANSWERING = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  '57P01', // admin_shutdown: a restart or failover ended the session
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or shutting down
  '53300', // too_many_connections
]);

export function isDatabaseUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return NOT_ANSWERING.has(code) || /^08[0-9A-Z]{3}$/.test(code);
}

import { ApiError, ConnectionError } from './client-errors.js';

/**
 * The server is down, restarting or failing (5xx, its database away), or asks to be asked later
 * (429, a limit per principal): worth waiting for. A refusal (401, 403, any other 4xx) is not:
 * waiting would not change the answer.
 */
export function isServerOutage(error: unknown): boolean {
  return (
    error instanceof ConnectionError ||
    (error instanceof ApiError && (error.status >= 500 || error.status === 429))
  );
}

export class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * Settles like `promise`, or rejects with a TimeoutError after `ms`. The work itself is not
 * stopped (a GitHub request, a database statement): the caller stops waiting for it, and a late
 * rejection is swallowed so that it cannot surface as an unhandled one.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  promise.catch(() => {});
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TimeoutError(`timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

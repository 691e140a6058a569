/** A provider's answer to a write-back that retrying cannot change (the issue is gone, the token refused…). */
export class FinalSendError extends Error {}

/** A service's answer that names when to try again (a 429's Retry-After): the outbox waits that long. */
export class RetryLaterError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
  }
}

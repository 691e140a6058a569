/**
 * Thrown from the webhook handler when a delivery could not be committed. Probot's middleware
 * answers `${name}: ${message}` with `status`, so the message is one clean sentence for GitHub's
 * delivery log — never a database error, a statement or a stack — and nothing was acknowledged.
 */
export class DeliveryNotRecorded extends Error {
  override readonly name = 'DeliveryNotRecorded';

  constructor(readonly status: number) {
    super(
      status === 503
        ? 'the delivery was not recorded in time (the database is slow or unreachable); nothing was stored, so redeliver it later'
        : 'the delivery could not be recorded; nothing was stored, so redeliver it later (the server log has the details)',
    );
  }
}

import type postgres from 'postgres';
import type { Logger } from '../platform/logger.js';
import { withTimeout } from '../platform/with-timeout.js';
import { FinalSendError, RetryLaterError } from './final-send-error.js';
import { claimDueWriteBack, type OutboxRow } from '../data/outbox/claim-due-write-back.js';
import { drainOutbox, type OutboxDrainer } from './drain-outbox.js';
import {
  markOutboxFailed,
  markOutboxSent,
  type RetryPolicy,
} from '../data/outbox/outbox-attempts.js';

/** Sends one row; throws FinalSendError when retrying cannot help, RetryLaterError to wait. */
export type OutboxSend<Row extends OutboxRow = OutboxRow> = (
  row: Row,
  signal: AbortSignal,
) => Promise<void>;

/** Who sends each kind of row: a provider's write-backs, Slack's messages. */
export type OutboxSenders = {
  [Kind in OutboxRow['kind']]?: OutboxSend<Extract<OutboxRow, { kind: Kind }>>;
};

export interface WriteBackTuning extends RetryPolicy {
  /** How often the outbox is looked at when nothing asked for an earlier look. */
  pollIntervalMs: number;
  /** How long one attempt holds its row; longer than `requestTimeoutMs`. */
  leaseMs: number;
  /** An attempt — the provider's token and its API call — is abandoned after this. */
  requestTimeoutMs: number;
}

export const DEFAULT_WRITE_BACK_TUNING: WriteBackTuning = {
  pollIntervalMs: 2000,
  leaseMs: 60_000,
  requestTimeoutMs: 20_000,
  retryBaseMs: 10_000,
  retryMaxMs: 3_600_000,
  // 10 s doubling to an hour: about 20 hours of retries before a write-back is given up.
  maxAttempts: 25,
};

/**
 * Sends what the outbox holds, one row at a time (GitHub asks integrations to send
 * content-creating requests serially), each through the sender of its kind. A failed attempt is
 * retried with backoff; an answer retrying cannot change (the issue is gone, the token refused,
 * the source removed) gives up at once and keeps the reason.
 */
export function createOutboxSender(options: {
  sql: postgres.Sql;
  log: Logger;
  tuning: WriteBackTuning;
  senders: OutboxSenders;
  /** Which rows this process can send now, asked at each claim (the App's credentials may come later). */
  sendable: () => { github: boolean; sources: boolean };
}): OutboxDrainer {
  const { sql, log, tuning, senders } = options;

  async function attempt(row: OutboxRow): Promise<void> {
    const fields = {
      outbox_id: row.id,
      todo_id: row.todo_id,
      source: row.source,
      write_back: row.write_back,
      attempt: row.attempts,
    };
    // One deadline for the whole attempt, the token included: a request's signal does not reach
    // an installation token request, nor a rate limit that Probot's throttling waits out, and an
    // attempt left waiting on either held up every other write-back, and shutdown, for minutes.
    // Past the deadline the attempt is failed and retried; its request is aborted, or never made
    // (fetch refuses an aborted signal), so nothing is sent late.
    const signal = AbortSignal.timeout(tuning.requestTimeoutMs);
    const send = async () => {
      const sender = senders[row.kind] as OutboxSend | undefined;
      if (!sender) throw new FinalSendError(`${row.kind} is not set up on this server`);
      await sender(row, signal);
    };
    try {
      await withTimeout(send(), tuning.requestTimeoutMs);
      await markOutboxSent(sql, row.id);
      log.debug(fields, 'write-back sent');
    } catch (error) {
      // The provider's status and message only, never its request (which holds a token).
      const reason = error instanceof Error ? error.message : String(error);
      const final = error instanceof FinalSendError;
      const retryAfterMs = error instanceof RetryLaterError ? error.retryAfterMs : undefined;
      const state = await markOutboxFailed(sql, row.id, reason, final, tuning, retryAfterMs);
      log.warn(
        { ...fields, error: reason.slice(0, 300) },
        state === 'dead' ? 'write-back given up' : 'write-back failed; will retry',
      );
    }
  }

  return drainOutbox({
    // Asked at each claim: the App's credentials may arrive while the server runs.
    claim: () => claimDueWriteBack(sql, tuning.leaseMs, options.sendable()),
    attempt,
    pollIntervalMs: tuning.pollIntervalMs,
    log,
    name: 'outbox',
  });
}

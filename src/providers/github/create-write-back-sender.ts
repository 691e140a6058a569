import type postgres from 'postgres';
import type { ProbotOctokit } from 'probot';
import type { Logger } from '../../logger.js';
import { drainOutbox, type OutboxDrainer } from '../drain-outbox.js';
import { sendWriteBack } from './send-write-back.js';
import { withTimeout } from './with-timeout.js';
import { claimDueWriteBack, type OutboxRow } from './write-back-outbox.js';
import { markOutboxFailed, markOutboxSent, type RetryPolicy } from '../outbox-attempts.js';

export interface WriteBackTuning extends RetryPolicy {
  /** How often the outbox is looked at when nothing asked for an earlier look. */
  pollIntervalMs: number;
  /** How long one attempt holds its row; longer than `requestTimeoutMs`. */
  leaseMs: number;
  /** An attempt — the installation token and the GitHub call — is abandoned after this. */
  requestTimeoutMs: number;
}

export type WriteBackSender = OutboxDrainer;

/** GitHub answers these for a target that is gone or a request it will never take. */
const FINAL_STATUSES = new Set([404, 410, 422]);

/**
 * Delivers queued write-backs one at a time (GitHub asks integrations to send content-creating
 * requests serially), through the installation's Octokit — with Probot's throttling in
 * production, so rate limits are waited out rather than hammered.
 */
export function createWriteBackSender(options: {
  sql: postgres.Sql;
  log: Logger;
  auth(installationId: number): Promise<ProbotOctokit>;
  tuning: WriteBackTuning;
}): WriteBackSender {
  const { sql, log, tuning } = options;

  async function attempt(row: OutboxRow): Promise<void> {
    const fields = {
      write_back_id: row.id,
      todo_id: row.todo_id,
      kind: row.kind,
      attempt: row.attempts,
    };
    // One deadline for the whole attempt, the installation token included: the request's signal
    // does not reach the token request, nor a rate limit that Probot's throttling waits out, and
    // an attempt left waiting on either held up every other write-back, and shutdown, for
    // minutes. Past the deadline the attempt is failed and retried; its request is aborted, or
    // never made (fetch refuses an aborted signal), so nothing is sent late.
    const signal = AbortSignal.timeout(tuning.requestTimeoutMs);
    const send = async () => {
      const octokit = await options.auth(row.installation_id);
      await sendWriteBack(octokit, row, signal);
    };
    try {
      await withTimeout(send(), tuning.requestTimeoutMs);
      await markOutboxSent(sql, row.id);
      log.debug(fields, 'github write-back sent');
    } catch (error) {
      // The status and GitHub's message only: an Octokit error also carries the request, whose
      // headers hold the installation token.
      const status = (error as { status?: unknown }).status;
      const message = error instanceof Error ? error.message : String(error);
      const reason = typeof status === 'number' ? `GitHub answered ${status}: ${message}` : message;
      const final = typeof status === 'number' && FINAL_STATUSES.has(status);
      const state = await markOutboxFailed(sql, row.id, reason, final, tuning);
      log.warn(
        { ...fields, status, error: reason.slice(0, 300) },
        state === 'dead' ? 'github write-back given up' : 'github write-back failed; will retry',
      );
    }
  }

  return drainOutbox({
    claim: () => claimDueWriteBack(sql, tuning.leaseMs),
    attempt,
    pollIntervalMs: tuning.pollIntervalMs,
    log,
    name: 'github outbox',
  });
}

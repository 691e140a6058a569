import type postgres from 'postgres';
import type { Logger } from '../logger.js';
import type { Outbound } from '../outbound/create-outbound.js';
import { drainOutbox, type OutboxDrainer } from '../providers/drain-outbox.js';
import type { WriteBackTuning } from '../providers/github/create-write-back-sender.js';
import { withTimeout } from '../providers/github/with-timeout.js';
import type { SecretBox } from './secret-box.js';
import { FinalSendError, sendSourceComment } from './send-source-comment.js';
import { markOutboxFailed, markOutboxSent } from '../providers/outbox-attempts.js';
import { claimDueSourceComment, type SourceOutboxRow } from './source-outbox.js';
import { openSource } from './source-store.js';

export type SourceOutboxSender = OutboxDrainer;

/**
 * Sends queued replies and summaries to the sources' APIs, one at a time, with the GitHub
 * outbox's retry policy: a failed attempt is retried with backoff, a final answer (the issue is
 * gone, the token refused, the source removed) gives up at once and keeps the reason.
 */
export function createSourceOutboxSender(options: {
  sql: postgres.Sql;
  box: SecretBox;
  log: Logger;
  outbound: Outbound;
  tuning: WriteBackTuning;
}): SourceOutboxSender {
  const { sql, box, log, outbound, tuning } = options;

  async function attempt(row: SourceOutboxRow): Promise<void> {
    const fields = {
      outbox_id: row.id,
      todo_id: row.todo_id,
      source: row.source,
      attempt: row.attempts,
    };
    const signal = AbortSignal.timeout(tuning.requestTimeoutMs);
    try {
      const source = await openSource(sql, box, row.source);
      if (!source) throw new FinalSendError(`source ${row.source} was removed`);
      if (!source.apiToken)
        throw new FinalSendError(`source ${row.source} has no API token any more`);
      await withTimeout(
        sendSourceComment(outbound, source, row.target, row.body, signal),
        tuning.requestTimeoutMs,
      );
      await markOutboxSent(sql, row.id);
      log.debug(fields, 'source write-back sent');
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      const state = await markOutboxFailed(
        sql,
        row.id,
        reason,
        error instanceof FinalSendError,
        tuning,
      );
      log.warn(
        { ...fields, error: reason.slice(0, 300) },
        state === 'dead' ? 'source write-back given up' : 'source write-back failed; will retry',
      );
    }
  }

  return drainOutbox({
    claim: () => claimDueSourceComment(sql, tuning.leaseMs),
    attempt,
    pollIntervalMs: tuning.pollIntervalMs,
    log,
    name: 'source outbox',
  });
}

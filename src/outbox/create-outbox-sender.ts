import type postgres from 'postgres';
import type { Logger } from '../logger.js';
import { providerOfKind } from '../providers/by-kind/provider-for.js';
import { FinalSendError, RetryLaterError } from '../providers/final-send-error.js';
import type { ProviderClients, SourceApi } from '../providers/provider.js';
import { withTimeout } from '../providers/with-timeout.js';
import type { SecretBox } from '../secrets/secret-box.js';
import { openSource } from '../sources/source-store.js';
import { claimDueWriteBack, type OutboxRow, type SlackMessageRow } from './claim-due-write-back.js';
import { drainOutbox, type OutboxDrainer } from './drain-outbox.js';
import { markOutboxFailed, markOutboxSent, type RetryPolicy } from './outbox-attempts.js';

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
 * Sends what the outbox holds, one write-back at a time (GitHub asks integrations to send
 * content-creating requests serially), each through its provider's `writeBack.send`: the App's
 * through its installation's Octokit, a source's through src/outbound with the token the
 * registry opens for it. A failed attempt is retried with backoff; an answer retrying cannot
 * change (the issue is gone, the token refused, the source removed) gives up at once and keeps
 * the reason.
 */
export function createOutboxSender(options: {
  sql: postgres.Sql;
  log: Logger;
  clients: ProviderClients;
  /** Opens the sources' tokens; null: no server key, so sources' write-backs wait. */
  box: SecretBox | null;
  tuning: WriteBackTuning;
  /** Sends Slack's rows (src/slack/send-slack-message.ts); without it they are given up. */
  slack?: ((row: SlackMessageRow, signal: AbortSignal) => Promise<void>) | undefined;
}): OutboxDrainer {
  const { sql, log, clients, box, tuning, slack } = options;

  /** A source's API and token, as the registry has them now. */
  async function apiOf(name: string): Promise<SourceApi> {
    const source = await openSource(sql, box!, name);
    if (!source) throw new FinalSendError(`source ${name} was removed`);
    if (!source.apiToken || !source.api_url)
      throw new FinalSendError(`source ${name} has no API token any more`);
    return { url: source.api_url, token: source.apiToken };
  }

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
      if (row.kind === 'slack') {
        if (!slack) throw new FinalSendError('Slack is not set up on this server');
        return slack(row, signal);
      }
      const writeBack = providerOfKind(row.kind)?.writeBack;
      if (!writeBack) throw new FinalSendError(`${row.kind} takes no write-backs`);
      const api = row.source === 'github' ? null : await apiOf(row.source);
      const { write_back, target, body } = row;
      await writeBack.send({ write_back, target, body, signal }, clients, api);
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
    claim: () =>
      claimDueWriteBack(sql, tuning.leaseMs, {
        github: clients.github !== null,
        sources: box !== null,
      }),
    attempt,
    pollIntervalMs: tuning.pollIntervalMs,
    log,
    name: 'outbox',
  });
}

import { setTimeout as sleep } from 'node:timers/promises';
import type postgres from 'postgres';
import type { ProbotOctokit } from 'probot';
import type { MissingDelivery, ReconcileReport } from '../../contract/deliveries.js';
import {
  askedRedeliveries,
  markRedeliveryAccepted,
  markRedeliveryRefused,
  recordedGitHubDeliveries,
  recordRedeliveryRequest,
  redeliveryWindowStart,
} from '../../data/deliveries/github-redeliveries.js';
import type { ReconcileTuning } from '../provider.js';

export const GITHUB_LOG_WINDOW_MS = 3 * 86_400_000;

export const DEFAULT_RECONCILE_TUNING: ReconcileTuning = {
  intervalMs: 5 * 60_000,
  windowMs: GITHUB_LOG_WINDOW_MS,
  // At most 50 a pass, a second apart: well inside GitHub's secondary limits (80 content-creating
  // requests a minute), and 600 an hour at the default interval — a long outage's backlog heals
  // within hours, inside the three days GitHub keeps it.
  maxRequests: 50,
  spacingMs: 1000,
  perPage: 100,
  maxPages: 100,
  requestTimeoutMs: 20_000,
};

/** Asking for an event more often than this is not healing it. */
export const MAX_REQUESTS_PER_EVENT = 3;

/** GitHub's log could not be read: nothing was asked for. */
export class DeliveryLogUnreadable extends Error {
  override readonly name = 'DeliveryLogUnreadable';
}

type LoggedAttempt = {
  id: number | bigint;
  guid: string;
  delivered_at: string;
  redelivery: boolean;
  status: string;
  status_code: number;
  event: string;
  action: string | null;
};

/** The status and GitHub's message only: an Octokit error also carries the request and its JWT. */
export function describeGitHubError(error: unknown): string {
  const status = (error as { status?: unknown }).status;
  const message = (error instanceof Error ? error.message : String(error)).slice(0, 300);
  return typeof status === 'number' ? `GitHub answered ${status}: ${message}` : message;
}

/**
 * One pass over GitHub's delivery log (`GET /app/hook/deliveries`, as the App, newest first, by
 * cursor), back to the start of the window: every event in it that switchboard has no record of
 * — its delivery failed (switchboard was down, or answered 5xx) or never reached it — is asked for
 * again (`POST /app/hook/deliveries/{id}/attempts`), within the pass's budget, each once: again
 * only when GitHub's log shows that the redelivery failed too, and never more than three times.
 * What was asked is written down before it is asked, so that whichever process runs the next
 * pass knows. The caller makes sure one process runs a pass at a time.
 *
 * GitHub sends a redelivery with the event's X-GitHub-Delivery, so the ordinary intake records
 * it once, and a redelivery of an event already recorded is a `duplicate` that makes nothing.
 */
export async function reconcileDeliveries(
  sql: postgres.Sql,
  octokit: ProbotOctokit,
  options: { sinceMs: number; tuning: ReconcileTuning; signal?: AbortSignal | undefined },
): Promise<ReconcileReport> {
  const { tuning } = options;
  const request = () => ({
    signal: options.signal
      ? AbortSignal.any([options.signal, AbortSignal.timeout(tuning.requestTimeoutMs)])
      : AbortSignal.timeout(tuning.requestTimeoutMs),
  });
  // A delivery from before this database existed was never meant for it (another deployment's,
  // or one before this installation): it is not switchboard's to ask for.
  const since = await redeliveryWindowStart(sql, options.sinceMs);

  const attempts: LoggedAttempt[] = [];
  try {
    let cursor: string | undefined;
    for (let page = 0; page < tuning.maxPages; page++) {
      const response = await octokit.rest.apps.listWebhookDeliveries({
        per_page: tuning.perPage,
        ...(cursor ? { cursor } : {}),
        request: request(),
      });
      let older = false;
      for (const attempt of response.data as LoggedAttempt[]) {
        if (Date.parse(attempt.delivered_at) < since.getTime()) older = true;
        else attempts.push(attempt);
      }
      cursor = nextCursor(response.headers.link);
      if (older || !cursor) break;
    }
  } catch (error) {
    throw new DeliveryLogUnreadable(
      `GitHub's delivery log could not be read: ${describeGitHubError(error)}`,
      { cause: error },
    );
  }

  // Each event's latest attempt speaks for it.
  const latest = new Map<string, LoggedAttempt>();
  for (const attempt of attempts) {
    const seen = latest.get(attempt.guid);
    if (!seen || BigInt(attempt.id) > BigInt(seen.id)) latest.set(attempt.guid, attempt);
  }
  const guids = [...latest.keys()];
  // Any record of an event's id means it arrived, a `duplicate` too (its body had come before
  // under another id): asking GitHub for it again would only make another duplicate.
  const recorded = await recordedGitHubDeliveries(sql, guids);
  const asked = await askedRedeliveries(sql, guids);

  const missing = [...latest.values()]
    .filter((attempt) => !recorded.has(attempt.guid))
    .sort(
      (a, b) =>
        Date.parse(a.delivered_at) - Date.parse(b.delivered_at) ||
        Number(BigInt(a.id) - BigInt(b.id)),
    );
  const report: ReconcileReport = {
    since: since.toISOString(),
    listed: attempts.length,
    events: latest.size,
    recorded: recorded.size,
    missing: [],
  };
  let budget = tuning.maxRequests;
  for (const attempt of missing) {
    const before = asked.get(attempt.guid);
    const entry: MissingDelivery = {
      guid: attempt.guid,
      event: attempt.event,
      action: attempt.action,
      delivered_at: attempt.delivered_at,
      status_code: attempt.status_code,
      status: attempt.status,
      requests: before?.requests ?? 0,
      outcome: 'deferred',
    };
    report.missing.push(entry);
    // Asked, taken, and GitHub has made no attempt since: the redelivery is on its way.
    if (before?.accepted && BigInt(attempt.id) <= BigInt(before.attempt_id)) {
      entry.outcome = 'waiting';
      continue;
    }
    if (before && before.requests >= MAX_REQUESTS_PER_EVENT) {
      entry.outcome = 'given_up';
      continue;
    }
    if (budget === 0 || options.signal?.aborted) continue;
    if (budget < tuning.maxRequests) await sleep(tuning.spacingMs, undefined, { ref: false });
    budget--;
    entry.requests = await recordRedeliveryRequest(sql, attempt);
    try {
      await octokit.rest.apps.redeliverWebhookDelivery({
        delivery_id: Number(attempt.id),
        request: request(),
      });
      entry.outcome = 'requested';
      await markRedeliveryAccepted(sql, attempt.guid);
    } catch (error) {
      entry.outcome = 'refused';
      entry.error = describeGitHubError(error);
      await markRedeliveryRefused(sql, attempt.guid, entry.error);
    }
  }
  return report;
}

/** The cursor of the next page, from GitHub's Link header (`<…&cursor=v1_…>; rel="next"`). */
function nextCursor(link: string | undefined): string | undefined {
  const next = link?.split(',').find((part) => /rel="next"/.test(part));
  const url = next && /<([^>]+)>/.exec(next)?.[1];
  return url ? (new URL(url).searchParams.get('cursor') ?? undefined) : undefined;
}

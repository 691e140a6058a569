import type postgres from 'postgres';
import { isDatabaseUnavailable } from '../../db/is-database-unavailable.js';
import type { Metrics } from '../../http/metrics.js';
import type { Todo } from '../../ledger/index.js';
import type { Logger } from '../../logger.js';
import { DeliveryNotRecorded } from './delivery-not-recorded.js';
import { decideDelivery } from './decide-delivery.js';
import type { LoadedConfig } from './load-repository-config.js';
import { readDeliveryFacts } from './read-delivery-facts.js';
import { readRuleFields } from './read-rule-fields.js';
import { recordDelivery, type RecordedDelivery } from './record-delivery.js';
import { DEFAULT_CONFIG } from './repository-config.js';
import { mayMatch } from './route-event.js';
import { TimeoutError, withTimeout } from './with-timeout.js';

export interface IngestOptions {
  sql: postgres.Sql;
  log: Logger;
  metrics: Metrics;
  /** The whole handler's budget: answered (committed or refused) well before GitHub's 10 s. */
  timeoutMs: number;
  /** The part of the budget the repository config may use. */
  configTimeoutMs: number;
  /** A body recorded under another delivery id within this is a replay; 0 turns the check off. */
  replayWindowMs: number;
  /** Whether write-backs are queued (the App's credentials are set). */
  writeBack: boolean;
  /** Announces new todos' wakes after their commit (src/delivery/wake-notifier.ts). */
  announce?: ((todos: Todo[]) => void) | undefined;
}

export interface Delivery {
  id: string;
  name: string;
  payload: Record<string, unknown>;
  /** The SHA-256 of the signed bytes. */
  bodySha256: Buffer;
  /** Reads `.github/switchboard.yml`; null when GitHub must not be called (no App credentials). */
  readConfig: ((timeoutMs: number) => Promise<LoadedConfig>) | null;
}

const DELIVERY_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * A verified delivery, start to end: read what it says, fetch the repository's rules if one
 * could apply, route, weigh trust, and commit the delivery row, its todo and its write-backs in
 * one transaction — within `timeoutMs`, or throw DeliveryNotRecorded so that GitHub is not
 * told "accepted" (Probot's middleware would answer 202 by itself after 9 s).
 */
export async function ingestDelivery(
  options: IngestOptions,
  delivery: Delivery,
): Promise<RecordedDelivery> {
  const { sql, log, metrics } = options;
  const deadline = Date.now() + options.timeoutMs;
  if (!DELIVERY_ID.test(delivery.id)) {
    throw Object.assign(new Error('X-GitHub-Delivery must be 1 to 128 printable characters'), {
      status: 400,
    });
  }
  const facts = readDeliveryFacts(delivery.id, delivery.name, delivery.payload);
  // The rules run on what is recorded, so that a delivery explained later runs them on the same.
  const fields = readRuleFields(delivery.payload);
  const base = { delivery_id: facts.deliveryId, event: facts.event, action: facts.action };

  let loaded: LoadedConfig = { config: DEFAULT_CONFIG, warning: null };
  try {
    // Only events a rule could want cost an API call, and a redelivery none at all.
    if (
      delivery.readConfig &&
      mayMatch(facts, fields) &&
      !(await isRecorded(sql, facts.deliveryId, deadline))
    ) {
      loaded = await delivery.readConfig(Math.min(options.configTimeoutMs, deadline - Date.now()));
    }
  } catch (error) {
    throw notRecorded(error);
  }
  if (loaded.warning) log.warn({ ...base, repository: facts.repository?.fullName }, loaded.warning);

  const decision = decideDelivery(facts, fields, loaded, options.writeBack);
  let recorded: RecordedDelivery;
  try {
    recorded = await withTimeout(
      recordDelivery(sql, decision, {
        deadline,
        fields,
        bodySha256: delivery.bodySha256,
        replayWindowMs: options.replayWindowMs,
        announce: options.announce,
      }),
      deadline - Date.now(),
    );
  } catch (error) {
    throw notRecorded(error);
  }
  metrics.deliveries.inc({ event: facts.event, disposition: recorded.disposition });
  metrics.providerDeliveries.inc({
    provider: 'github',
    source: 'github',
    disposition: recorded.disposition,
  });
  log.info(
    {
      ...base,
      repository: facts.repository?.fullName,
      disposition: recorded.disposition,
      todo_id: recorded.todoId,
      note: recorded.note,
    },
    'github delivery recorded',
  );
  return recorded;

  function notRecorded(error: unknown): DeliveryNotRecorded {
    metrics.deliveries.inc({ event: facts.event, disposition: 'not_recorded' });
    metrics.providerDeliveries.inc({
      provider: 'github',
      source: 'github',
      disposition: 'not_recorded',
    });
    // The error's own fields (code, message, the constraint) help; postgres.js keeps the
    // statement and its parameters out of them.
    log.error({ ...base, err: error }, 'github delivery not recorded');
    const unavailable = error instanceof TimeoutError || isDatabaseUnavailable(error);
    return new DeliveryNotRecorded(unavailable ? 503 : 500);
  }
}

async function isRecorded(
  sql: postgres.Sql,
  deliveryId: string,
  deadline: number,
): Promise<boolean> {
  const rows = await withTimeout(
    sql`select 1 from deliveries where source = 'github' and delivery_id = ${deliveryId} and disposition not in ('duplicate', 'unreadable')`,
    deadline - Date.now(),
  );
  return rows.length > 0;
}

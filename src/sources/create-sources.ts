import type { RequestHandler, Router } from 'express';
import type postgres from 'postgres';
import type { Metrics } from '../http/metrics.js';
import type { PublicAddress } from '../http/public-address.js';
import type { TodoHooks } from '../http/todo-routes.js';
import type { Logger } from '../logger.js';
import type { Outbound } from '../outbound/create-outbound.js';
import {
  DEFAULT_GITHUB_TUNING,
  type GitHubTuning,
} from '../providers/github/create-github-provider.js';
import type { WriteBackTuning } from '../providers/github/create-write-back-sender.js';
import { createSourceOutboxSender } from './create-source-outbox-sender.js';
import { receiveSourceDelivery } from './receive-source-delivery.js';
import { createSecretBox } from './secret-box.js';
import { queueSourceReply, queueSourceSummary } from './source-outbox.js';
import { sourceRoutes } from './source-routes.js';

export interface SourcesTuning {
  ingestTimeoutMs: number;
  replayWindowMs: number;
  writeBack: WriteBackTuning;
}

export interface Sources {
  /** POST /api/sources/:name/webhooks. */
  webhooks: RequestHandler;
  /** Admin routes under /api/v1 (`switchboard source …`). */
  routes: Router;
  /** Replies and summaries back to the source's issue or merge request. */
  hooks: TodoHooks;
  start(): void;
  stop(): Promise<void>;
}

/**
 * Sources beyond GitHub: the intake, the admin API and the outbox back to them. Without a server
 * key (`key` undefined) the intake and the admin API answer 503 and say which variable to set.
 */
export function createSources(options: {
  sql: postgres.Sql;
  log: Logger;
  metrics: Metrics;
  key: Buffer | undefined;
  /** How replies reach the sources' APIs (src/outbound). */
  outbound: Outbound;
  /** Where providers post (each source's webhook URL is built on it). */
  address: PublicAddress;
  tuning?: Partial<Omit<SourcesTuning, 'writeBack'>> & { writeBack?: Partial<WriteBackTuning> };
}): Sources {
  const { sql, log, metrics, outbound } = options;
  const defaults: Pick<GitHubTuning, 'ingestTimeoutMs' | 'replayWindowMs' | 'writeBack'> =
    DEFAULT_GITHUB_TUNING;
  const tuning: SourcesTuning = {
    ingestTimeoutMs: options.tuning?.ingestTimeoutMs ?? defaults.ingestTimeoutMs,
    replayWindowMs: options.tuning?.replayWindowMs ?? defaults.replayWindowMs,
    writeBack: { ...defaults.writeBack, ...options.tuning?.writeBack },
  };
  const box = options.key ? createSecretBox(options.key) : null;
  const sender = box
    ? createSourceOutboxSender({ sql, box, log, outbound, tuning: tuning.writeBack })
    : undefined;
  const receive = receiveSourceDelivery({
    sql,
    log,
    metrics,
    box,
    timeoutMs: tuning.ingestTimeoutMs,
    replayWindowMs: tuning.replayWindowMs,
  });
  return {
    webhooks: (req, res, next) => {
      receive(req, res).catch(next);
    },
    routes: sourceRoutes(sql, box, outbound.policy, options.address),
    hooks: { afterComplete: queueSourceSummary, afterReply: queueSourceReply },
    start: () => sender?.start(),
    stop: async () => sender?.stop(),
  };
}

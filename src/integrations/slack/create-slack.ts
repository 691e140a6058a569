import { Router, type RequestHandler } from 'express';
import type postgres from 'postgres';
import type { WakeHub } from '../../wakes/wake-hub.js';
import type { PublicAddress } from '../../kit/http/public-address.js';
import type { Logger } from '../../platform/logger.js';
import type { SlackMessageRow } from '../../data/outbox/claim-due-write-back.js';
import type { SecretBox } from '../../platform/secrets/secret-box.js';
import { createSlackMessageSender } from './send-slack-message.js';
import type { RenderPage } from '../../kit/pages/render-page.js';
import { slackApiRoutes } from './slack-api-routes.js';
import { slackConsolePages } from './slack-console-pages.js';
import { slackOAuthPages } from './slack-oauth-pages.js';
import {
  createSlackClients,
  SLACK_API_URL,
  slackKeysUrl,
  type SlackClientFactory,
} from './slack-client.js';
import { createSlackNotifier, type SlackNotifier } from './slack-notifier.js';
import { slackRoutes } from './slack-routes.js';
import { createSlackWork } from './slack-work.js';
import { createSlackIdTokenVerifier } from './verify-slack-id-token.js';
import type { Outbound } from '../../platform/egress/create-egress.js';
import type { TodoService } from '../../todos/create-todo-service.js';

export interface SlackTuning {
  /** How often ended approvals' messages and missed wakes are looked for (ms). */
  sweepMs?: number;
}

export interface Slack {
  clients: SlackClientFactory;
  /** /api/slack/interactions and /api/slack/events (read within the webhook body budget). */
  interactions: RequestHandler;
  events: RequestHandler;
  /** Under /api/v1: the app, links, link codes, notification preferences. */
  apiRoutes: Router;
  /** The console's /slack page and its forms. */
  consolePages: (render: RenderPage) => Router;
  /** The outbox's sender for Slack's rows; null without a server key (nothing is queued then). */
  sendMessage: ((row: SlackMessageRow, signal: AbortSignal) => Promise<void>) | null;
  /** Starts queueing approvals' messages and their updates, from the ledger's wakes. */
  start(hub: WakeHub): void;
  stop(): Promise<void>;
}

/** Slack, composed: one Web API client factory, the endpoints Slack calls, the API, the notifier. */
export function createSlack(options: {
  sql: postgres.Sql;
  box: SecretBox | null;
  log: Logger;
  address: PublicAddress;
  apiUrl?: string | undefined;
  /** Reads Slack's signing keys for Sign in with Slack (no inside address, no redirect). */
  outbound: Outbound;
  /** Look at the outbox now. */
  kick: () => void;
  /** Where Allow and Deny pressed in Slack are recorded. */
  todos: Pick<TodoService, 'decide'>;
  tuning?: SlackTuning | undefined;
}): Slack {
  const { sql, box, log, address, kick, todos } = options;
  const clients = createSlackClients(options.apiUrl);
  const idTokens = createSlackIdTokenVerifier({
    jwksUrl: slackKeysUrl(options.apiUrl ?? SLACK_API_URL),
    outbound: options.outbound,
  });
  const publicUrl = () => address.url();
  const work = createSlackWork({ sql, clients, log, publicUrl, todos });
  const { interactions, events } = slackRoutes({ sql, box, log, work });
  let notifier: SlackNotifier | undefined;
  return {
    clients,
    interactions,
    events,
    apiRoutes: slackApiRoutes({ sql, box, clients, address }),
    consolePages: (render) =>
      Router({ caseSensitive: true }).use(
        slackConsolePages(sql, render),
        slackOAuthPages({ sql, box, clients, idTokens, log, publicUrl, render }),
      ),
    sendMessage: box ? createSlackMessageSender({ sql, box, clients, log, publicUrl, kick }) : null,
    start(hub) {
      if (!box) return;
      notifier = createSlackNotifier({ sql, hub, log, kick, sweepMs: options.tuning?.sweepMs });
    },
    async stop() {
      await notifier?.stop();
      await work.stop();
    },
  };
}

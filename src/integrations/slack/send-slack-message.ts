import type postgres from 'postgres';
import type { Logger } from '../../platform/logger.js';
import type { SlackMessageRow } from '../../data/outbox/claim-due-write-back.js';
import { FinalSendError, RetryLaterError } from '../../outbox/final-send-error.js';
import type { SecretBox } from '../../platform/secrets/secret-box.js';
import { approvalBlocks, fallbackText, outcomeOf } from './approval-message.js';
import { markTokenRefused, openSlackApp } from './slack-app-store.js';
import { slackFailureOf, type SlackClientFactory } from './slack-client.js';
import {
  approvalShown,
  messageOf,
  queueMessageUpdate,
  recordNotice,
  recordPosted,
} from './slack-messages.js';

/**
 * The outbox's sender for Slack's rows. An approval's message is rendered from the todo when it
 * is sent, so it shows the approval as it stands: one that ended before its message went out is
 * not posted at all, and one that ends while it is being posted gets its update queued after.
 * A 429 waits for its Retry-After, a 5xx backs off, and either stops mattering once the approval
 * has ended; a refused token is recorded once (the log, the console) and nothing more is tried
 * with it.
 */
export function createSlackMessageSender(options: {
  sql: postgres.Sql;
  box: SecretBox;
  clients: SlackClientFactory;
  log: Logger;
  publicUrl: () => string;
  /** Look at the outbox again (an update was queued behind a post). */
  kick: () => void;
}): (row: SlackMessageRow, signal: AbortSignal) => Promise<void> {
  const { sql, box, clients, log, publicUrl, kick } = options;

  return async (row) => {
    const app = await openSlackApp(sql, box);
    if (!app?.botToken) throw new FinalSendError('no Slack app is installed');
    if (app.token_refused_at)
      throw new FinalSendError(`Slack refused the bot token (${app.token_refused_reason})`);
    const todo = await approvalShown(sql, row.todo_id);
    const message = await messageOf(sql, row.todo_id);
    if (!todo || !message)
      throw new FinalSendError(`approval #${row.todo_id} has no Slack message`);
    const client = clients(app.botToken);
    const content = { text: fallbackText(todo), blocks: approvalBlocks(todo, publicUrl()) };
    const principal = todo.assignee;

    const failed = async (error: unknown): Promise<never> => {
      const failure = slackFailureOf(error);
      if (failure.kind === 'token_refused') {
        if (await markTokenRefused(sql, failure.detail)) {
          log.warn(
            { team_id: app.team_id, reason: failure.detail },
            'Slack refused the bot token: nothing more is sent to Slack until it is replaced (switchboard slack add, or install again from the console)',
          );
        }
        throw new FinalSendError(failure.detail);
      }
      if (failure.kind === 'final') {
        if (row.write_back === 'message') {
          await recordNotice(sql, todo.id, { principal, outcome: `failed (${failure.detail})` });
        }
        throw new FinalSendError(failure.detail);
      }
      if (failure.retryAfterMs !== undefined)
        throw new RetryLaterError(failure.detail, failure.retryAfterMs);
      throw new Error(failure.detail);
    };

    if (row.write_back === 'message') {
      if (message.ts) return;
      if (todo.state !== 'pending' || (todo.expires_at && todo.expires_at <= new Date())) {
        await recordNotice(sql, todo.id, {
          principal,
          outcome: 'not sent (the approval ended first)',
        });
        return;
      }
      const channel = message.chosen_channel ?? message.slack_user_id;
      let posted: { channel?: string; ts?: string };
      try {
        posted = await client.chat.postMessage({
          channel,
          ...content,
          unfurl_links: false,
          unfurl_media: false,
        });
      } catch (error) {
        return failed(error);
      }
      if (!posted.channel || !posted.ts)
        throw new FinalSendError('Slack took the message but named no channel or ts');
      await recordPosted(sql, todo.id, posted.channel, posted.ts);
      await recordNotice(sql, todo.id, {
        principal,
        outcome: 'delivered',
        channel: posted.channel,
      });
      // Ended while it was being posted: the message just sent shows buttons, and an update
      // queued meanwhile may have found nothing to update. One more follows.
      const now = await approvalShown(sql, todo.id);
      if (now && outcomeOf(now) !== null) {
        await queueMessageUpdate(sql, todo.id);
        kick();
      }
      return;
    }

    // An update of a message never posted has nothing to change: its post, if it is still to
    // come, renders the approval as it ended (or is not sent at all).
    if (!message.ts || !message.channel_id) return;
    try {
      await client.chat.update({ channel: message.channel_id, ts: message.ts, ...content });
    } catch (error) {
      return failed(error);
    }
  };
}

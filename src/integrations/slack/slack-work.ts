import type postgres from 'postgres';
import {
  actorFor,
  displayId,
  getTodo,
  LedgerError,
  type Actor,
  type Principal,
  type Todo,
} from '../../data/index.js';
import type { TodoService } from '../../todos/create-todo-service.js';
import type { Logger } from '../../platform/logger.js';
import { denyModal } from './approval-message.js';
import { markTokenRefused, type OpenedSlackApp } from './slack-app-store.js';
import { slackFailureOf, type SlackClientFactory } from './slack-client.js';
import { codeIn, linkedHuman, redeemLinkCode } from './slack-links.js';

export interface Press {
  app: OpenedSlackApp;
  user: string;
  channel: string | null;
  todoId: number;
  verdict: 'allow' | 'deny';
  triggerId: string | null;
}

export interface SlackWork {
  /** Allow or Deny pressed: Allow decides, Deny opens the modal for a note. */
  press(press: Press): void;
  /** The Deny modal was submitted. */
  denyWithNote(submission: {
    app: OpenedSlackApp;
    user: string;
    channel: string | null;
    todoId: number;
    note: string | null;
  }): void;
  /** An Events API event, seen for the first time. */
  event(app: OpenedSlackApp, event: Record<string, unknown> & { type: string }): void;
  /** Resolves once the work in flight has finished. */
  stop(): Promise<void>;
}

/**
 * What a Slack request asks for, done after its acknowledgement. A press decides only as the
 * human its Slack user is linked to, and only what the console would let that human decide (the
 * assignee, or an admin): the verdict goes through the todo service as every other surface's does,
 * recorded `via: slack`, and the approval's wake carries it on to whoever waits and to every
 * message. Anything else — not linked, not theirs, decided already — changes nothing and is
 * said to the presser alone (an ephemeral message).
 */
export function createSlackWork(options: {
  sql: postgres.Sql;
  clients: SlackClientFactory;
  log: Logger;
  publicUrl: () => string;
  /** Where a verdict is recorded, as every surface's is. */
  todos: Pick<TodoService, 'decide'>;
}): SlackWork {
  const { sql, clients, log, publicUrl, todos } = options;
  const inFlight = new Set<Promise<unknown>>();
  const track = (work: Promise<unknown>) => {
    const tracked = work.catch((error: unknown) => {
      log.warn({ err: error }, 'a Slack interaction failed after it was acknowledged');
    });
    inFlight.add(tracked);
    void tracked.finally(() => inFlight.delete(tracked));
  };

  /** One try, no retry: an answer to a press that cannot be given now is not worth giving later. */
  const call = async (
    app: OpenedSlackApp,
    what: string,
    send: (client: ReturnType<SlackClientFactory>) => Promise<unknown>,
  ) => {
    if (!app.botToken || app.token_refused_at) return;
    try {
      await send(clients(app.botToken));
    } catch (error) {
      const failure = slackFailureOf(error);
      if (failure.kind === 'token_refused' && (await markTokenRefused(sql, failure.detail))) {
        log.warn(
          { team_id: app.team_id, reason: failure.detail },
          'Slack refused the bot token: nothing more is sent to Slack until it is replaced',
        );
        return;
      }
      log.warn({ what, reason: failure.detail }, 'a Slack answer was not sent');
    }
  };

  const ephemeral = (app: OpenedSlackApp, channel: string | null, user: string, text: string) =>
    channel === null
      ? call(app, 'direct message', (client) => client.chat.postMessage({ channel: user, text }))
      : call(app, 'ephemeral message', (client) =>
          client.chat.postEphemeral({ channel, user, text }),
        );

  const notLinked = () =>
    'Your Slack user is not linked to switchboard, so this press decided nothing. ' +
    'Link it: run `switchboard slack link` and send me the code it prints in a direct message, ' +
    `or use the Slack page of the console (${publicUrl()}/slack).`;

  /** The human behind a Slack user, or null (the presser is told how to link). */
  const humanOf = async (
    app: OpenedSlackApp,
    user: string,
    channel: string | null,
  ): Promise<Principal | null> => {
    const human = await linkedHuman(sql, { team_id: app.team_id!, user_id: user });
    if (!human) await ephemeral(app, channel, user, notLinked());
    return human;
  };

  const refusalText = (error: LedgerError, todoId: number) =>
    error.code === 'not_found'
      ? `Approval ${displayId(todoId)} is not yours to decide (only its assignee or an admin may): nothing changed.`
      : `${error.message.charAt(0).toUpperCase()}${error.message.slice(1)}. Nothing changed.`;

  const decide = async (
    app: OpenedSlackApp,
    user: string,
    channel: string | null,
    todoId: number,
    verdict: 'allow' | 'deny',
    note: string | null,
  ) => {
    const human = await humanOf(app, user, channel);
    if (!human) return;
    try {
      await todos.decide(actorFor(human, 'slack'), todoId, verdict, note?.trim() ? note : null);
    } catch (error) {
      if (!(error instanceof LedgerError)) throw error;
      await ephemeral(app, channel, user, refusalText(error, todoId));
    }
  };

  /** Deny's modal opens only for someone whose verdict would count, on an approval still open. */
  const openDenyModal = async (press: Press) => {
    const human = await humanOf(press.app, press.user, press.channel);
    if (!human) return;
    const actor: Actor = actorFor(human, 'slack');
    let todo: Todo;
    try {
      todo = await getTodo(sql, actor, press.todoId);
    } catch (error) {
      if (!(error instanceof LedgerError)) throw error;
      return ephemeral(press.app, press.channel, press.user, refusalText(error, press.todoId));
    }
    if (todo.kind !== 'approval' || (todo.assignee !== actor.name && !human.is_admin)) {
      return ephemeral(
        press.app,
        press.channel,
        press.user,
        refusalText(new LedgerError('not_found', ''), press.todoId),
      );
    }
    if (todo.state !== 'pending' || (todo.expires_at && todo.expires_at <= new Date())) {
      // Decided, expired or canceled: deciding says which, and changes nothing.
      return decide(press.app, press.user, press.channel, press.todoId, 'deny', null);
    }
    if (!press.triggerId) return;
    await call(press.app, 'the Deny modal', (client) =>
      client.views.open({
        trigger_id: press.triggerId!,
        view: denyModal(todo, { channel: press.channel }) as never,
      }),
    );
  };

  const linkByCode = async (app: OpenedSlackApp, event: Record<string, unknown>) => {
    // Only a person's own direct message to the bot: not the bot's own, an edit, or a bot's.
    if (event.channel_type !== 'im' || event.subtype !== undefined || event.bot_id !== undefined)
      return;
    const user = typeof event.user === 'string' ? event.user : null;
    const channel = typeof event.channel === 'string' ? event.channel : null;
    const text = typeof event.text === 'string' ? event.text.slice(0, 2000) : '';
    if (!user || !channel || !/^[UW][A-Z0-9]{2,30}$/.test(user) || user === app.bot_user_id) return;
    const code = codeIn(text);
    let reply: string;
    if (!code) {
      reply =
        'To link your Slack user to switchboard, run `switchboard slack link` and send me the code it prints.';
    } else {
      try {
        const human = await redeemLinkCode(sql, code, { team_id: app.team_id!, user_id: user });
        reply = human
          ? `Linked: you are *${human.name}* on switchboard. Approvals assigned to you come here, and your Allow and Deny count as theirs. ` +
            '`switchboard slack unlink` undoes it at once.'
          : 'That code is unknown or has expired: run `switchboard slack link` for a new one.';
        if (human) log.info({ principal: human.name, slack_user: user }, 'a Slack user was linked');
      } catch (error) {
        if (!(error instanceof LedgerError)) throw error;
        reply = `${error.message}.`;
      }
    }
    await call(app, 'the link reply', (client) =>
      client.chat.postMessage({ channel, text: reply }),
    );
  };

  return {
    press(press) {
      track(
        press.verdict === 'allow'
          ? decide(press.app, press.user, press.channel, press.todoId, 'allow', null)
          : openDenyModal(press),
      );
    },
    denyWithNote({ app, user, channel, todoId, note }) {
      track(decide(app, user, channel, todoId, 'deny', note));
    },
    event(app, event) {
      if (event.type === 'message') track(linkByCode(app, event));
      else if (event.type === 'app_uninstalled' || event.type === 'tokens_revoked') {
        track(
          markTokenRefused(sql, `Slack said ${event.type}`).then((first) => {
            if (first)
              log.warn(
                { team_id: app.team_id, event: event.type },
                'Slack says the app was uninstalled or its tokens revoked: nothing more is sent to Slack until it is installed again',
              );
          }),
        );
      }
    },
    async stop() {
      await Promise.allSettled([...inFlight]);
    },
  };
}

import { Router } from 'express';
import type postgres from 'postgres';
import type { Dispatcher } from '../../wakes/create-dispatcher.js';
import { createEventStreams } from '../../kit/http/create-event-streams.js';
import { tooManyStreams } from '../../kit/http/principal-slots.js';
import { sendError } from '../../kit/http/http-error.js';
import type { PrincipalSlots } from '../../kit/http/principal-slots.js';
import type { RevocationWatch } from '../../kit/http/revocation-watch.js';
import { LedgerError } from '../../data/index.js';
import type { Logger } from '../../platform/logger.js';
import type { ChangeFeed } from '../../wakes/change-feed.js';
import { findPage, waitingApprovals } from './console-pages.js';
import { html } from '../../kit/pages/html.js';
import { revisionOf } from '../../kit/pages/render-page.js';
import { waitingBadge } from '../../kit/pages/layout.js';
import { GONE } from '../../kit/pages/live-attrs.js';
import type { LiveItem } from '../../kit/pages/page-view.js';
import { problemBody } from '../../kit/pages/sign-in-page.js';
import { localPath, webRequestOf } from '../../kit/pages/web-request.js';

/** How soon a dropped stream's browser tries again. */
const RETRY_MS = 2000;

export interface LiveStreams {
  routes: Router;
  /** How many page streams are open in this process. */
  size: () => number;
  closeAll: () => void;
}

/**
 * `GET /live?page=PATH&rev=R`: one server-sent-events stream per open console page, signed in
 * by the session cookie and showing only what that human's page shows. On every (re)connect it
 * loads the page afresh and, if it differs from what the page was rendered with (`rev`), sends
 * it whole (`snapshot`); then, whenever the ledger may have changed (the change feed, or a
 * doorbell for this human), it loads the page again and sends only what changed: a new item
 * (`new`, on top of the list), a changed one (`live-<key>`, replacing it), the waiting count
 * (`count`) and a line for each approval that just arrived (`notify`).
 */
export function liveStreams({
  sql,
  dispatcher,
  feed,
  log,
  revocations,
  slots,
}: {
  sql: postgres.Sql;
  dispatcher: Dispatcher;
  feed: ChangeFeed;
  log: Logger;
  /** Ends a stream the moment its session is signed out, expires or its human is revoked. */
  revocations: RevocationWatch;
  /** Open event streams per principal, shared with the API's and MCP's. */
  slots: PrincipalSlots;
}): LiveStreams {
  const streams = createEventStreams();
  const routes = Router({ caseSensitive: true });

  routes.get('/live', async (req, res) => {
    const web = webRequestOf(res);
    if (!web) {
      res.status(401).type('text').send('signed out');
      return;
    }
    const path = localPath(req.query.page, '');
    const url = new URL(path || '/', 'http://x');
    const page = path ? findPage(url.pathname) : undefined;
    if (!page) {
      res.status(404).type('text').send('no such page');
      return;
    }
    const rev = typeof req.query.rev === 'string' ? req.query.rev : '';
    const release = slots.take(web.actor.name);
    if (!release) {
      const refusal = tooManyStreams(slots, web.actor.name);
      return sendError(res, refusal.status, refusal.code, refusal.message);
    }
    let closed = false;
    let unsubscribe = () => {};
    let unwatch = () => {};
    // A close comes on a later tick than this one, which sets `attaching` below.
    const stream = streams.open(res, {
      retryMs: RETRY_MS,
      onClose: () => {
        closed = true;
        release();
        unwatch();
        unsubscribe();
        void attaching.then((attached) => attached.detach()).catch(() => {});
      },
    });
    // The session was checked when the stream opened, and is not again while it stays open: it
    // ends with its session, in whichever process that ended. (Its browser's next attempt is
    // then refused, and the page says it is offline.)
    unwatch = revocations.watch(
      { kind: 'web_session', sessionId: web.session.id, principalId: web.session.human.id },
      () => {
        closed = true;
        stream.end();
      },
    );
    // A CR would end a data line (and so the markup) early; as a character reference it reads
    // the same in HTML.
    const send = (event: string, data: string) => stream.send(event, data.replace(/\r/g, '&#13;'));

    const context = { sql, web, cache: new Map<string, unknown>() };
    let shown: Map<string, string> | undefined;
    let waitingShown: Set<number> | undefined;
    let running = false;
    let again = false;

    const once = async () => {
      // Finished approvals' facts are cached for the stream's life; a page open for weeks sees
      // many finish, so the cache starts over now and then rather than grow without end.
      if (context.cache.size > 1000) context.cache.clear();
      let items: LiveItem[];
      let region: (items: LiveItem[]) => ReturnType<typeof html>;
      try {
        ({ items, region } = await page.load(context, page.params, url.searchParams));
      } catch (error) {
        if (!(error instanceof LedgerError)) throw error;
        items = [];
        region = () => problemBody(error.message);
      }
      const next = new Map(items.map((item) => [item.key, String(item.html)]));
      const structural =
        shown !== undefined &&
        ((shown.size === 0) !== (next.size === 0) ||
          items.some((item) => !item.listed && !shown!.has(item.key)));
      if (shown === undefined ? revisionOf(items) !== rev : structural) {
        send('snapshot', String(region(items)));
      } else if (shown) {
        // Oldest first, so that the newest ends up on top.
        for (const item of items.filter((item) => !shown!.has(item.key)).reverse())
          send('new', next.get(item.key)!);
        for (const [key, markup] of next)
          if (shown.has(key) && shown.get(key) !== markup) send(`live-${key}`, markup);
        for (const key of shown.keys()) if (!next.has(key)) send(`live-${key}`, GONE);
      }
      shown = next;

      const waiting = await waitingApprovals(sql, web.actor);
      const ids = new Set(waiting.map((todo) => todo.id));
      if (
        !waitingShown ||
        ids.size !== waitingShown.size ||
        waiting.some((t) => !waitingShown!.has(t.id))
      )
        send('count', String(waitingBadge(waiting.length)));
      const arrived = waitingShown ? waiting.filter((todo) => !waitingShown!.has(todo.id)) : [];
      if (arrived.length)
        send(
          'notify',
          String(
            html`${arrived.map((todo) => html`<p data-approval="${todo.id}">${todo.title}</p>`)}`,
          ),
        );
      waitingShown = ids;
    };

    const refresh = async () => {
      if (closed) return;
      if (running) {
        again = true;
        return;
      }
      running = true;
      try {
        do {
          again = false;
          await once();
        } while (again && !closed);
      } catch (error) {
        log.warn({ err: error }, 'a console page stream could not refresh; it will try again');
      } finally {
        running = false;
      }
    };

    unsubscribe = feed.subscribe(() => void refresh());
    // A consumer of its human's doorbells: approvals and verdicts come at once (no queue: a page
    // never claims, so it must never take a claimable todo's ring from a consumer that would).
    const attaching = dispatcher.attach({
      principal: web.session.human,
      path: 'sse',
      queues: [],
      push: () => {
        if (closed || !stream.open) return false;
        void refresh();
        return true;
      },
    });
    await attaching;
    await refresh();
  });

  return { routes, size: () => streams.size(), closeAll: () => streams.closeAll() };
}

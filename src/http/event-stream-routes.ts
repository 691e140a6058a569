import { Router, type Response } from 'express';
import { z } from 'zod';
import type postgres from 'postgres';
import type { Dispatcher } from '../delivery/create-dispatcher.js';
import { registerWebhook, removeWebhook } from '../delivery/register-webhook.js';
import type { Doorbell } from '../contract/doorbell.js';
import type { OutboundPolicy } from '../outbound/outbound-policy.js';
import type { ChangeFeed } from '../delivery/change-feed.js';
import { actorOf } from './authenticate.js';

const PING_MS = 15_000;
const WebhookBody = z.strictObject({ url: z.string().max(2048) });

const Query = z.strictObject({
  /** One queue or several (`?queue=a&queue=b`); none means every queue the caller may work. */
  queue: z.union([z.string(), z.array(z.string())]).optional(),
  /** `channel`: the consumer is a Claude Code channel (the richest rung of the ladder). */
  consumer: z.enum(['sse', 'channel']).default('sse'),
  /**
   * `1`: also an `event: change` whenever the ledger may have changed, for a view of what waits
   * (`inbox --watch`) to read it again. Such a stream watches and never claims: without
   * `?queue=` it is rung for no claimable todo.
   */
  changes: z.enum(['1', 'true']).optional(),
});

export interface EventStreams {
  routes: Router;
  /** Ends every open stream, so that a closing server is not held open by them. */
  closeAll(): void;
}

/**
 * `GET /events`: a server-sent-events stream that attaches the caller as a consumer. It gets one
 * `digest` of what already waits, then `ready`, then a `wake` for each doorbell rung for it (a
 * todo to claim, an approval to decide, a verdict on its question). Claim after `ready` and on
 * every wake, and nothing committed in between is missed. With `?changes=1`, also a `change`
 * each time the ledger may have changed (the same poll of its history as the console's pages).
 */
export function eventStreamRoutes(
  sql: postgres.Sql,
  dispatcher: Dispatcher,
  outbound: OutboundPolicy,
  feed: ChangeFeed,
): EventStreams {
  const open = new Set<Response>();
  const routes = Router();

  // The caller's outbound webhook: rung when it has no live session (see README, delivery ladder).
  routes.put('/webhook', async (req, res) => {
    const { url } = WebhookBody.parse(req.body ?? {});
    res.json(await registerWebhook(sql, outbound, actorOf(res).name, url));
  });
  routes.delete('/webhook', async (_req, res) => {
    res.json({ removed: await removeWebhook(sql, actorOf(res).name) });
  });

  routes.get('/events', async (req, res) => {
    const { queue, consumer, changes } = Query.parse(req.query);
    const actor = actorOf(res);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      // A stream's connection is never reused: it closes with the stream (so a stopping server
      // is not kept waiting for the client's idle keep-alive socket).
      connection: 'close',
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    open.add(res);
    const push = (doorbell: Doorbell) => {
      if (res.writableEnded || res.destroyed) return false;
      res.write(
        `event: ${doorbell.type === 'digest' ? 'digest' : 'wake'}\ndata: ${JSON.stringify(doorbell)}\n\n`,
      );
      return true;
    };
    const attached = await dispatcher.attach({
      principal: actor.principal!,
      path: consumer,
      queues: queue === undefined ? (changes ? [] : null) : [queue].flat(),
      push,
    });
    const ping = setInterval(() => res.write(': ping\n\n'), PING_MS);
    // Only ticks that saw the ledger move: what time alone changes (an expiry) is written by the
    // sweeper, which moves it too.
    const unsubscribe = changes
      ? feed.subscribe((changed) => {
          if (changed && !res.writableEnded && !res.destroyed)
            res.write('event: change\ndata: {}\n\n');
        })
      : () => {};
    res.once('close', () => {
      clearInterval(ping);
      unsubscribe();
      open.delete(res);
      void attached.detach();
    });
    if (res.writableEnded || res.destroyed) {
      clearInterval(ping);
      unsubscribe();
      await attached.detach();
      return;
    }
    res.write(`event: ready\ndata: ${JSON.stringify({ session_id: attached.id })}\n\n`);
  });
  return {
    routes,
    closeAll() {
      for (const res of open) res.end();
    },
  };
}

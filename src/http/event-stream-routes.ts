import { Router, type Response } from 'express';
import { z } from 'zod';
import type postgres from 'postgres';
import type { Dispatcher } from '../delivery/create-dispatcher.js';
import { registerWebhook, removeWebhook } from '../delivery/register-webhook.js';
import type { Doorbell } from '../contract/doorbell.js';
import type { OutboundPolicy } from '../outbound/outbound-policy.js';
import type { ChangeFeed } from '../delivery/change-feed.js';
import { actorOf, tokenOf } from './authenticate.js';
import { HttpError } from './http-error.js';
import type { PrincipalSlots } from './principal-slots.js';
import type { RevocationWatch } from './revocation-watch.js';

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
  revocations: RevocationWatch,
  /** Open event streams per principal, shared with MCP's and the console's. */
  streams: PrincipalSlots,
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
    const release = streams.take(actor.name);
    if (!release) throw tooManyStreams(streams, actor.name);
    res.once('close', release);
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
    // A revoked token's stream ends at once, whichever process revoked it.
    const unwatch = revocations.watch(
      { kind: 'token', token: tokenOf(res), principalId: actor.principal!.id },
      () => res.end(),
    );
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
    const ping = setInterval(() => !res.writableEnded && res.write(': ping\n\n'), PING_MS);
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
      unwatch();
      open.delete(res);
      void attached.detach();
    });
    if (res.writableEnded || res.destroyed) {
      clearInterval(ping);
      unsubscribe();
      unwatch();
      open.delete(res);
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

/** The refusal of a stream over the cap: which cap, and how to free a slot. */
export function tooManyStreams(streams: PrincipalSlots, name: string): HttpError {
  return new HttpError(
    429,
    'too_many_streams',
    `${name} has ${streams.limit} event streams open, the most allowed per principal (SWITCHBOARD_MAX_STREAMS; ` +
      'API /events, MCP notification streams and console pages count alike): close one to free its slot',
  );
}

import { Router } from 'express';
import { z } from 'zod';
import type postgres from 'postgres';
import type { Dispatcher } from '../../wakes/create-dispatcher.js';
import { registerWebhook, removeWebhook } from '../../integrations/webhooks/register-webhook.js';
import type { Doorbell } from '../../contract/doorbell.js';
import type { OutboundPolicy } from '../../platform/egress/egress-policy.js';
import type { ChangeFeed } from '../../wakes/change-feed.js';
import { actorOf, tokenOf } from '../../kit/http/authenticate.js';
import { createEventStreams } from '../../kit/http/create-event-streams.js';
import { tooManyStreams, type PrincipalSlots } from '../../kit/http/principal-slots.js';
import type { RevocationWatch } from '../../kit/http/revocation-watch.js';

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
  slots: PrincipalSlots,
): EventStreams {
  const streams = createEventStreams();
  const routes = Router({ caseSensitive: true });

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
    const release = slots.take(actor.name);
    if (!release) throw tooManyStreams(slots, actor.name);
    let unsubscribe = () => {};
    let unwatch = () => {};
    // A close comes on a later tick than this one, which sets `attaching` below.
    const stream = streams.open(res, {
      onClose: () => {
        release();
        unsubscribe();
        unwatch();
        void attaching.then((attached) => attached.detach()).catch(() => {});
      },
    });
    // A revoked token's stream ends at once, whichever process revoked it.
    unwatch = revocations.watch(
      { kind: 'token', token: tokenOf(res), principalId: actor.principal!.id },
      () => stream.end(),
    );
    const push = (doorbell: Doorbell) =>
      stream.send(doorbell.type === 'digest' ? 'digest' : 'wake', JSON.stringify(doorbell));
    const attaching = dispatcher.attach({
      principal: actor.principal!,
      path: consumer,
      queues: queue === undefined ? (changes ? [] : null) : [queue].flat(),
      push,
    });
    const attached = await attaching;
    // The client left while it was being attached: its close has detached it already.
    if (!stream.open) return;
    // Only ticks that saw the ledger move: what time alone changes (an expiry) is written by the
    // sweeper, which moves it too.
    if (changes)
      unsubscribe = feed.subscribe((changed) => {
        if (changed) stream.send('change', '{}');
      });
    stream.send('ready', JSON.stringify({ session_id: attached.id }));
  });
  return { routes, closeAll: () => streams.closeAll() };
}

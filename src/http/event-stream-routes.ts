import { Router, type Response } from 'express';
import { z } from 'zod';
import { wakeConcerns, type WakeHub } from '../delivery/wake-hub.js';
import { actorOf } from './authenticate.js';

const PING_MS = 15_000;

const Query = z.strictObject({
  /** One queue or several (`?queue=a&queue=b`); none means every queue the caller may work. */
  queue: z.union([z.string(), z.array(z.string())]).optional(),
});

export interface EventStreams {
  routes: Router;
  /** Ends every open stream, so that a closing server is not held open by them. */
  closeAll(): void;
}

/**
 * `GET /events`: a server-sent-events stream of the wakes that concern the caller. It says
 * `ready` once this process is listening, so a client that then claims, and claims again on
 * every wake, cannot miss a todo committed in between.
 */
export function eventStreamRoutes(hub: WakeHub): EventStreams {
  const open = new Set<Response>();
  const routes = Router();
  routes.get('/events', async (req, res) => {
    const { queue } = Query.parse(req.query);
    const queues = queue === undefined ? undefined : new Set([queue].flat());
    const actor = actorOf(res);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    open.add(res);
    const unsubscribe = hub.subscribe((wake) => {
      if (queues && !queues.has(wake.queue)) return;
      if (wakeConcerns(actor, wake)) res.write(`event: wake\ndata: ${JSON.stringify(wake)}\n\n`);
    });
    const ping = setInterval(() => res.write(': ping\n\n'), PING_MS);
    const stop = () => {
      clearInterval(ping);
      unsubscribe();
      open.delete(res);
    };
    res.once('close', stop);
    await hub.ready;
    if (!res.writableEnded) res.write('event: ready\ndata: {}\n\n');
  });
  return {
    routes,
    closeAll() {
      for (const res of open) res.end();
    },
  };
}

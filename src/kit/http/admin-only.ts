import type { RequestHandler } from 'express';
import { forbidden } from '../../data/index.js';
import { actorOf } from './authenticate.js';

/** The handlers adminOnly made, by which a route only admins may use is known. */
const made = new WeakSet<RequestHandler>();

/**
 * The first handler of every route only admins may use, before its body or query is looked at:
 * anyone else is refused 403 and learns nothing of what the route takes (no 400 naming its
 * fields). The ledger checks the role again where it decides.
 */
export function adminOnly(what: string): RequestHandler {
  const handler: RequestHandler = (_req, res, next) => {
    const actor = actorOf(res);
    if (actor.kind !== 'human' || !actor.principal.is_admin)
      throw forbidden(`only an admin may ${what}`);
    next();
  };
  made.add(handler);
  return handler;
}

/** Whether `handler` is one adminOnly made (test/http/admin-routes.test.ts lists the routes). */
export function isAdminOnly(handler: unknown): boolean {
  return made.has(handler as RequestHandler);
}

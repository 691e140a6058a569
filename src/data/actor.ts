import type { Db } from '../platform/db/open-database.js';
import type { Principal, PrincipalKind } from '../contract/principal.js';
import { forbidden } from './ledger-error.js';

export type { Principal, PrincipalKind } from '../contract/principal.js';

/**
 * Who is acting, and from where (`cli`, `mcp`, `channel`, `github`, `api`, `sweeper`, …).
 * System actors are switchboard itself: a provider adapter, the sweeper.
 */
export type Actor =
  | { kind: PrincipalKind; principal: Principal; name: string; via: string }
  | { kind: 'system'; principal: null; name: string; via: string };

export function actorFor(principal: Principal, via: string): Actor {
  return { kind: principal.kind, principal, name: principal.name, via };
}

export function systemActor(name: string, via = name): Actor {
  return { kind: 'system', principal: null, name, via };
}

/** The human a piece of work done by this actor is attributed to. */
export function humanBehind(actor: Actor): string | null {
  if (actor.kind === 'human') return actor.name;
  if (actor.kind === 'agent') return actor.principal.owner;
  return null;
}

export function isAgent(actor: Actor): actor is Actor & { kind: 'agent'; principal: Principal } {
  return actor.kind === 'agent';
}

/**
 * The todos an actor may see, as a SQL condition on `todos`. An agent sees its own queues
 * (never quarantined todos) and the approvals it asked for; a human sees every todo but other
 * humans' approvals (an approval is its assignee's to decide, and what it asks may be private);
 * admins and the system see all. Out-of-scope todos are reported as missing, exactly like todos
 * that do not exist.
 */
export function visibleTo(db: Db, actor: Actor) {
  if (isAgent(actor)) {
    return db`((queue = any(${actor.principal.queues ?? []}::text[]) and state <> 'quarantined') or requested_by = ${actor.name})`;
  }
  if (actor.kind === 'human' && !actor.principal.is_admin) {
    return db`(kind <> 'approval' or assignee = ${actor.name} or requested_by = ${actor.name})`;
  }
  return db`true`;
}

/**
 * Whether an approval waits for this actor to decide: it is assigned to them or, for an admin,
 * to no one — an approval whose human was deactivated with no backup is the admins'.
 */
export function approvalWaitsFor(
  todo: { kind: string; assignee: string | null },
  actor: Actor,
): boolean {
  if (todo.kind !== 'approval' || actor.kind !== 'human') return false;
  return todo.assignee === actor.name || (todo.assignee === null && actor.principal.is_admin);
}

/** What waits for an actor, as an SQL condition on `todos` aliased `t`: assigned to or held by it. */
export function waitsFor(db: Db, actor: Actor) {
  const admins =
    actor.kind === 'human' && actor.principal.is_admin
      ? db`or (t.kind = 'approval' and t.assignee is null)`
      : db``;
  return db`(t.assignee = ${actor.name} or t.claimed_by = ${actor.name} ${admins})`;
}

export function assertMayWorkQueue(actor: Actor, queue: string): void {
  if (isAgent(actor) && !actor.principal.queues?.includes(queue)) {
    throw forbidden(
      `agent ${actor.name} may not use queue ${queue} (its queues: ${actor.principal.queues?.join(', ')})`,
    );
  }
}

export function assertHuman(actor: Actor, what: string): void {
  if (actor.kind !== 'human') throw forbidden(`only a human may ${what}`);
}

/**
 * The spelling rules for the names a todo carries: queues, principals (agents, humans, an
 * assignee) and kinds. The ledger enforces them; clients (the CLI) check them too, so that a
 * malformed argument is a usage error said before anything is sent. Shared, so it imports nothing.
 */

const SLUG = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const KIND = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+){0,7}$/;
const KIND_MAX = 100;

/**
 * Why `value` is no queue or principal name (`what` says which), or null when it is one:
 * `queue must be lowercase letters, … not "Reviews"`.
 */
export function nameProblem(value: string, what: string): string | null {
  if (SLUG.test(value)) return null;
  return `${what} must be lowercase letters, digits, '.', '_' or '-' (at most 64), not ${JSON.stringify(value.slice(0, 80))}`;
}

/** Why `kind` is no kind (dotted lowercase words), or null when it is one. */
export function kindProblem(kind: string): string | null {
  if (kind.length <= KIND_MAX && KIND.test(kind)) return null;
  return `kind must be dotted lowercase words like github.issues.opened, not ${JSON.stringify(kind.slice(0, 80))}`;
}

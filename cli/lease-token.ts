import * as Flags from '@oclif/core/flags';
import type { ApiClient, Todo } from '../src/client/api-client.js';
import { ApiError } from '../src/client/client-errors.js';
import { createLeaseStore } from '../src/client/lease-store.js';
import { CommandError, EXIT } from './command-error.js';

export const leaseTokenFlag = Flags.string({
  description:
    'the lease token returned by the claim (default: the one saved when this machine claimed the todo)',
  env: 'SWITCHBOARD_LEASE_TOKEN',
  helpValue: 'UUID',
});

/**
 * Runs one of the lease holder's operations (heartbeat, complete, fail, release) with the
 * todo's lease token: `--lease-token` / SWITCHBOARD_LEASE_TOKEN, else the token `todo claim`
 * saved on this machine. A saved token is forgotten once its lease is over: finished (`ends`)
 * or refused as lost.
 */
export async function withLeaseToken<T extends { todo: Todo }>(
  client: ApiClient,
  id: number,
  given: string | undefined,
  { ends }: { ends: boolean },
  operation: (leaseToken: string) => Promise<T>,
): Promise<T> {
  const leases = createLeaseStore(client.url);
  const saved = given ? undefined : await leases.get(id);
  const token = given ?? saved;
  if (!token) throw new CommandError(await whyNoLease(client, id), EXIT.refused);
  try {
    const result = await operation(token);
    if (ends) await leases.remove(id);
    else if (saved) {
      await leases.save({
        todo_id: id,
        lease_token: saved,
        lease_expires_at: result.todo.lease_expires_at,
      });
    }
    return result;
  } catch (error) {
    const over = error instanceof ApiError && ['lease_lost', 'not_found'].includes(error.code);
    if (over && saved) await leases.remove(id);
    throw error;
  }
}

/**
 * Why this machine holds no lease on todo `id`, as it stands: that it does not exist (the
 * server's 404, thrown as it is), is finished, waits for a claim, or is someone else's — rather
 * than "claim it here first" for a todo nobody can claim any more.
 */
async function whyNoLease(client: ApiClient, id: number): Promise<string> {
  const { todo } = await client.getTodo(id);
  const ref = `#${id}`;
  const claimFirst = `claim it first ('switchboard todo claim ${id}')`;
  if (todo.kind === 'approval') {
    return `${ref} is an approval: a human decides it ('switchboard todo approve ${id}' or 'deny'), nobody holds it`;
  }
  switch (todo.state) {
    case 'done':
      return `${ref} is done already — nobody holds it any more`;
    case 'canceled':
      return `${ref} is canceled — nobody holds it any more`;
    case 'quarantined':
      return `${ref} is quarantined: nobody may claim it until a human releases it`;
    case 'failed':
      return todo.retry_at
        ? `${ref} failed and waits for its next attempt (from ${todo.retry_at}): nobody holds it — ${claimFirst}`
        : `${ref} failed for good — nobody holds it any more`;
    case 'pending':
      return `${ref} is pending: nobody holds it — ${claimFirst}`;
    case 'claimed': {
      const { principal } = await client.whoami();
      if (todo.claimed_by !== principal.name) {
        return `${ref} is claimed by ${todo.claimed_by}, not by you`;
      }
      return `${ref} is claimed by you, but not from this machine: pass the lease token from where you claimed it with --lease-token (or SWITCHBOARD_LEASE_TOKEN)`;
    }
  }
}

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
  if (!token) {
    throw new CommandError(
      `no lease token for #${id} on this machine — claim it here first, or pass --lease-token (or SWITCHBOARD_LEASE_TOKEN)`,
      EXIT.refused,
    );
  }
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

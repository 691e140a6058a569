import * as Flags from '@oclif/core/flags';
import type { ClaimedTodo, HeldBack } from '../../../src/client/api-client.js';
import { claimNextWaiting } from '../../../src/client/claim-next-waiting.js';
import { createLeaseStore } from '../../../src/client/lease-store.js';
import { openWakeStream } from '../../../src/client/open-wake-stream.js';
import { CommandError, EXIT } from '../../command-error.js';
import { formatTodoLine } from '../../format-todos.js';
import { leaseFlag } from '../../lease-flag.js';
import { SwitchboardCommand } from '../../switchboard-command.js';
import { optionalTodoIdArg } from '../../todo-id-arg.js';
import { queueFlag } from '../../name-flags.js';

export default class TodoClaim extends SwitchboardCommand {
  static override summary = 'Claim a todo: by id, or the oldest claimable one on a queue';
  static override description = `The claim holds the todo under a lease; its lease token is saved on this machine (under $XDG_STATE_HOME/switchboard/leases), so heartbeat, complete, fail and release need only the id. --json prints the todo with its lease_token, for use elsewhere with --lease-token.

Without an ID, on an empty queue it prints "no pending todo on QUEUE" ({"todo":null} with --json) and exits 0. --wait blocks up to that many seconds for a todo to arrive, woken by the server's event stream; a server that cannot be reached yet (or restarts meanwhile) is waited for within the same seconds, saying so once on stderr, and exit 4 if it never answered.

A queue at its limits (see 'queue show') holds its todos back: without an ID it prints "no claimable todo on QUEUE: at its limit of 3 in flight — next at …" ({"todo":null,"held_back":{…}}) and exits 0, as for an empty queue; --wait claims again at that time, not before (or sooner, when the server rings). By ID, a held-back todo is refused (exit 3), saying until when.`;
  static override examples = [
    '<%= config.bin %> todo claim --queue reviews',
    '<%= config.bin %> todo claim --queue reviews --wait 60 --lease 900 --json',
    '<%= config.bin %> todo claim 42',
  ];
  static override enableJsonFlag = true;
  static override args = {
    id: optionalTodoIdArg('the todo to claim (else the oldest on --queue)'),
  };
  static override flags = {
    queue: queueFlag({ description: 'claim the oldest claimable todo of this queue' }),
    lease: leaseFlag,
    wait: Flags.integer({
      min: 0,
      max: 86_400,
      description: 'with --queue: wait up to this many seconds for a todo to arrive',
      helpValue: 'SECONDS',
      dependsOn: ['queue'],
    }),
  };

  async run(): Promise<{ todo: ClaimedTodo | null; held_back?: HeldBack }> {
    const { args, flags } = await this.parse(TodoClaim);
    if (args.id === undefined && flags.queue === undefined) {
      throw new CommandError('give a todo ID or --queue QUEUE — see --help', EXIT.usage);
    }
    if (args.id !== undefined && flags.queue !== undefined) {
      throw new CommandError('give a todo ID or --queue QUEUE, not both', EXIT.usage);
    }
    const client = await this.client();
    let todo: ClaimedTodo | null;
    let heldBack: HeldBack | undefined;
    if (args.id !== undefined) {
      ({ todo } = await client.claimTodo(args.id, flags.lease));
    } else if (!flags.wait) {
      ({ todo, held_back: heldBack } = await client.claimNext(flags.queue!, flags.lease));
    } else {
      const { url } = await this.credentials();
      const deadline = Date.now() + flags.wait * 1000;
      // A server that is not up yet (or restarts meanwhile) is waited for within --wait, said
      // once; one that never answered in that time is exit 4, not "no pending todo".
      let told = false;
      const waiting = (problem: Error) => {
        if (told) return;
        told = true;
        process.stderr.write(
          `waiting for switchboard at ${url} — ${problem.message}; up to ${flags.wait} s in all\n`,
        );
      };
      const wakes = openWakeStream(await this.credentials(), flags.queue, { onWaiting: waiting });
      try {
        todo = await claimNextWaiting(client, wakes, flags.queue!, {
          leaseSeconds: flags.lease,
          deadline,
          onOutage: waiting,
          onHeldBack: (held) => (heldBack = held),
        });
      } finally {
        wakes.close();
      }
    }
    if (!todo && heldBack) {
      this.log(`no claimable todo on ${flags.queue}: ${heldBack.message}`);
      return { todo: null, held_back: heldBack };
    }
    if (!todo) {
      this.log(`no pending todo on ${flags.queue}`);
      return { todo: null };
    }
    await createLeaseStore(client.url).save({
      todo_id: todo.id,
      lease_token: todo.lease_token,
      lease_expires_at: todo.lease_expires_at,
    });
    this.log(`claimed ${formatTodoLine(todo)}`);
    return { todo };
  }
}

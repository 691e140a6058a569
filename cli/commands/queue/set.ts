import { queueArg } from '../../name-flags.js';
import * as Flags from '@oclif/core/flags';
import type { QueueLimitsChange } from '../../../src/contract/queue.js';
import { CommandError, EXIT } from '../../command-error.js';
import { formatLimits, formatUsage } from '../../format-queues.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

// The server's bounds (src/data/queues/queue-limits.ts), checked here so that a typo is a usage error.
const MAX_IN_FLIGHT = 10_000;
const MAX_CLAIMS = 1_000_000;

export default class QueueSet extends SwitchboardCommand {
  static override summary = "Set or clear a queue's limits (admins)";
  static override description = `--max-in-flight N: at most N of the queue's todos claimed at once (a lease that ends frees its slot). --max-claims N/hour or N/day: at most N claims in any hour or day (a sliding window; every claim counts, a lost lease claimed again too). "none" clears a limit; a limit not given is kept. Claims over a limit are not refused: the queue's todos stay pending, and claims say until when.`;
  static override examples = [
    '<%= config.bin %> queue set reviews --max-in-flight 3',
    '<%= config.bin %> queue set reviews --max-in-flight 3 --max-claims 100/hour',
    '<%= config.bin %> queue set ci --max-claims 500/day --json',
    '<%= config.bin %> queue set reviews --max-in-flight none --max-claims none',
  ];
  static override enableJsonFlag = true;
  static override args = { queue: queueArg({ required: true, description: 'the queue' }) };
  static override flags = {
    'max-in-flight': Flags.string({
      description: 'at most this many claimed at once, or none',
      helpValue: 'N|none',
    }),
    'max-claims': Flags.string({
      description: 'at most this many claims an hour or a day, or none',
      helpValue: 'N/hour|N/day|none',
    }),
  };

  async run() {
    const { args, flags } = await this.parse(QueueSet);
    const change: QueueLimitsChange = {};
    const inFlight = flags['max-in-flight'];
    const claims = flags['max-claims'];
    if (inFlight === undefined && claims === undefined) {
      throw new CommandError('give --max-in-flight or --max-claims — see --help', EXIT.usage);
    }
    if (inFlight !== undefined) {
      change.max_in_flight =
        inFlight === 'none' ? null : count(inFlight, '--max-in-flight', MAX_IN_FLIGHT);
    }
    if (claims !== undefined) {
      if (claims === 'none') {
        change.max_claims = null;
      } else {
        const [, n, window] = /^([^/]*)\/(.*)$/.exec(claims) ?? [];
        if (n === undefined || (window !== 'hour' && window !== 'day')) {
          throw new CommandError(
            `--max-claims must be N/hour, N/day or none, not ${JSON.stringify(claims)}`,
            EXIT.usage,
          );
        }
        change.max_claims = count(n, '--max-claims', MAX_CLAIMS);
        change.claims_window = window;
      }
    }
    const client = await this.client();
    const { queue } = await client.setQueueLimits(args.queue, change);
    this.log(`${queue.name}: ${formatLimits(queue)} — now ${formatUsage(queue)}`);
    if (queue.held_back) this.log(`held back: ${queue.held_back.message}`);
    return { queue };
  }
}

/** A whole number from 1 to `max`, written as plain digits. */
function count(text: string, flag: string, max: number): number {
  const n = /^[1-9][0-9]*$/.test(text) ? Number(text) : NaN;
  if (!(n <= max)) {
    throw new CommandError(
      `${flag} must be a whole number from 1 to ${max} (or none), not ${JSON.stringify(text)}`,
      EXIT.usage,
    );
  }
  return n;
}

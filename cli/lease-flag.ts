import * as Flags from '@oclif/core/flags';

/** --lease: how long a claim or heartbeat holds the todo. */
export const leaseFlag = Flags.integer({
  min: 1,
  max: 86_400,
  description: 'lease length in seconds (default 300, at most 24 h)',
  helpValue: 'SECONDS',
});

/** The longest pause between two tries: a server that is back is noticed within this. */
const MAX_MS = 5000;

/**
 * How long to pause before try number `failures + 1`: doubling from half a second up to `maxMs`
 * (5 s), each pause between half and all of that at random, so that the workers of a whole
 * machine, started together under a supervisor, do not knock on a restarting server in step.
 */
export function retryDelay(failures: number, maxMs = MAX_MS): number {
  const ceiling = Math.min(maxMs, 500 * 2 ** Math.min(failures, 16));
  return ceiling / 2 + (Math.random() * ceiling) / 2;
}

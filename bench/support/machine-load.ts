import { availableParallelism, loadavg } from 'node:os';

/**
 * The machine's 1-minute load average against its cores, printed with latency figures: other
 * work on a small machine (a test suite, a build) shows in the tails more than anywhere else.
 */
export function machineLoad(): number {
  return loadavg()[0]!;
}

export function describeLoad(start: number, end: number): string {
  return `machine load (1-minute average) at start / end: ${start.toFixed(1)} / ${end.toFixed(1)} on ${availableParallelism()} cores`;
}

/** The load beside a target's figure, in the summary table: `load 2.1 → 3.4 on 2 cores`. */
export function loadNote(start: number, end: number): string {
  return `load ${start.toFixed(1)} → ${end.toFixed(1)} on ${availableParallelism()} cores`;
}

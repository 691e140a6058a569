import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';

/**
 * The line printed above the summary table, to be kept with the figures: when, on what, and how
 * busy the machine was (its 1, 5 and 15-minute load averages) when the run ended.
 */
export function describeMachine(startLoad: number): string {
  const [one, five, fifteen] = loadavg().map((value) => value.toFixed(2));
  const model = cpus()[0]?.model.trim() ?? 'unknown CPU';
  return (
    `${new Date().toISOString().slice(0, 10)}, ${availableParallelism()} cores (${model}), ` +
    `${(totalmem() / 2 ** 30).toFixed(1)} GiB, Node ${process.versions.node}; load average at ` +
    `start ${startLoad.toFixed(2)}, at end ${one} / ${five} / ${fifteen} (1 / 5 / 15 min)`
  );
}

import type { Queue } from '../src/client/api-client.js';
import { formatTable } from './format-todos.js';

const per = (queue: Queue) => (queue.claims_window === 'hour' ? 'an hour' : 'a day');

/** `at most 3 in flight, 100 claims an hour`, or `no limits`. */
export function formatLimits(queue: Queue): string {
  const limits = [
    ...(queue.max_in_flight === null ? [] : [`${queue.max_in_flight} in flight`]),
    ...(queue.max_claims === null ? [] : [`${queue.max_claims} claims ${per(queue)}`]),
  ];
  return limits.length ? `at most ${limits.join(', ')}` : 'no limits';
}

/** `2 in flight, 40 claims in the last hour, 5 waiting`. */
export function formatUsage(queue: Queue): string {
  const window = queue.claims_window === 'hour' ? 'hour' : 'day';
  return [
    `${queue.in_flight} in flight`,
    ...(queue.claims_in_window === null
      ? []
      : [`${queue.claims_in_window} claims in the last ${window}`]),
    `${queue.waiting} waiting`,
  ].join(', ');
}

/** What `queue show` prints: limits, usage, and whether its todos are held back and until when. */
export function formatQueueDetails(queue: Queue): string {
  return [
    `queue ${queue.name}: ${formatLimits(queue)}`,
    `now: ${formatUsage(queue)}`,
    queue.held_back
      ? `held back: ${queue.held_back.message}`
      : `admitting claims${queue.max_in_flight === null && queue.max_claims === null ? '' : ' (under its limits)'}`,
    ...(queue.updated_by ? [`limits set by ${queue.updated_by} at ${queue.updated_at}`] : []),
  ].join('\n');
}

/** `queue list`: one line per queue. */
export function formatQueueTable(queues: Queue[]): string {
  return formatTable(
    ['QUEUE', 'IN FLIGHT', 'CLAIMS', 'WAITING', 'ADMITTING'],
    queues.map((queue) => [
      queue.name,
      queue.max_in_flight === null
        ? String(queue.in_flight)
        : `${queue.in_flight}/${queue.max_in_flight}`,
      queue.max_claims === null
        ? '-'
        : `${queue.claims_in_window}/${queue.max_claims} per ${queue.claims_window}`,
      String(queue.waiting),
      queue.held_back ? `no: ${queue.held_back.message}` : 'yes',
    ]),
  );
}

import type postgres from 'postgres';
import { digestContent, type Doorbell } from '../contract/doorbell.js';
import { waitingTodos } from '../data/wakes/waiting-todos.js';
import type { ConsumerSpec } from './local-sessions.js';

const DIGEST_SIZE = 10;

/**
 * One message listing what already waits for a consumer that just attached, instead of a burst
 * of rings; undefined when nothing waits.
 */
export async function waitingDigest(
  sql: postgres.Sql,
  { principal, queues }: Pick<ConsumerSpec, 'principal' | 'queues'>,
): Promise<Doorbell | undefined> {
  const waiting = await waitingTodos(sql, { principal, queues }, DIGEST_SIZE);
  if (waiting.length === 0) return undefined;
  const todos = waiting.map(({ todo_id, queue, kind, title }) => ({ todo_id, queue, kind, title }));
  const more = waiting[0]!.total - todos.length;
  return { type: 'digest', todos, more, content: digestContent(todos, more) };
}

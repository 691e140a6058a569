import type { Todo } from '../src/client/api-client.js';
import { ago, expiry } from './format-todos.js';

export interface InboxItem {
  /** One line in the list (and the plain output). */
  line: string;
  /** The selected item's first line, and what follows it in full. */
  heading: string;
  details: string[];
}

/** What an inbox entry says: an approval by who asks and when it expires; other todos by state. */
export function describeInboxItem(todo: Todo): InboxItem {
  if (todo.kind === 'approval') {
    const expires = expiry(todo);
    const when = expires === 'expired' ? ', expired' : expires ? `, expires ${expires}` : '';
    return {
      line: `#${todo.id} approval from ${todo.requested_by}${when} — ${todo.title}`,
      heading: [
        `#${todo.id} approval asked by ${todo.requested_by}`,
        `expires at ${todo.expires_at}`,
        ...(todo.about_todo_id === null ? [] : [`about #${todo.about_todo_id}`]),
      ].join(' · '),
      details: [todo.title, ...(todo.body ? ['', todo.body] : [])],
    };
  }
  const held = todo.state === 'claimed' ? ` by ${todo.claimed_by}` : '';
  return {
    line: `#${todo.id} ${todo.state}${held} on ${todo.queue}, ${ago(todo.created_at)} old — ${todo.title}`,
    heading: [
      `#${todo.id} ${todo.kind} on ${todo.queue}`,
      `${todo.state}${held}`,
      `attributed to ${todo.attributed_to}`,
    ].join(' · '),
    details: [todo.title, ...(todo.url ? [todo.url] : []), ...(todo.body ? ['', todo.body] : [])],
  };
}

import type { Todo } from '../../../data/index.js';
import { html, type Html } from '../../../kit/pages/html.js';
import { liveAttrs } from '../../../kit/pages/live-attrs.js';
import { timeTag } from '../../../kit/pages/time-tag.js';

/** A todo's state as a badge; the word is the state, the colour only repeats it. */
export function stateBadge(todo: Pick<Todo, 'state' | 'verdict'>): Html {
  const word = todo.verdict ? `${todo.state} (${todo.verdict})` : todo.state;
  return html`<span class="state state-${todo.state}">${word}</span>`;
}

/** Who holds it or may take it, for a row. */
export function holder(todo: Todo): string {
  if (todo.state === 'claimed') return `claimed by ${todo.claimed_by}`;
  if (todo.decided_by) return `decided by ${todo.decided_by}`;
  if (todo.assignee) return `for ${todo.assignee}`;
  if (todo.state === 'done' && todo.claimed_by) return `done by ${todo.claimed_by}`;
  return '';
}

/** One todo as a row of the board. */
export function todoRow(todo: Todo): Html {
  return html`<tr ${liveAttrs(`todo-${todo.id}`)} data-item tabindex="-1">
    <td><a href="/todos/${todo.id}">#${todo.id}</a></td>
    <td class="queue">${todo.queue}</td>
    <td>${stateBadge(todo)}</td>
    <td class="title">${todo.title}</td>
    <td>${holder(todo)}</td>
    <td>${timeTag(todo.updated_at)}</td>
  </tr>`;
}

export const TODO_TABLE_HEAD = html`<thead>
  <tr>
    <th scope="col">Todo</th>
    <th scope="col">Queue</th>
    <th scope="col">State</th>
    <th scope="col">Title</th>
    <th scope="col">Who</th>
    <th scope="col">Changed</th>
  </tr>
</thead>`;

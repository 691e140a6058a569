import { listTodos, TODO_STATES, type Todo } from '../../ledger/index.js';
import { html } from '../html.js';
import { mayDecide } from './approval-card.js';
import { liveAttrs } from './live-attrs.js';
import type { LiveItem, PageLoader } from './page-view.js';
import { TODO_TABLE_HEAD, todoRow } from './todo-row.js';

const SHOWN = 200;
const STATES = ['open', ...TODO_STATES, 'all'] as const;

/** `/todos`: the todos the human can see, newest first, filtered by queue and state, counted by both. */
export const boardPage: PageLoader = async ({ sql, web }, _params, query) => {
  // Queue names are lowercase: `Reviews` typed in the filter means `reviews`, not a refusal.
  const queue = query.get('queue')?.trim().toLowerCase() || undefined;
  const stateParam = query.get('state') ?? 'open';
  const state = (STATES as readonly string[]).includes(stateParam)
    ? (stateParam as (typeof STATES)[number])
    : 'open';
  const todos = (await listTodos(sql, web.actor, { queue, state, limit: SHOWN })).filter(
    (todo) => todo.kind !== 'approval' || mayDecide(todo, web.actor),
  );
  const items: LiveItem[] = [
    { key: 'counts', listed: false, html: counts(todos) },
    ...todos.map((todo) => ({ key: `todo-${todo.id}`, listed: true, html: todoRow(todo) })),
  ];
  // Each label with its control, so that they wrap together on a narrow screen.
  const intro = html`<form class="filters" method="get" action="/todos">
    <div class="filter">
      <label for="filter-queue">Queue</label>
      <input id="filter-queue" name="queue" value="${queue ?? ''}" placeholder="every queue" />
    </div>
    <div class="filter">
      <label for="filter-state">State</label>
      <select id="filter-state" name="state">
        ${STATES.map(
          (option) =>
            html`<option value="${option}" ${option === state ? 'selected' : ''}>
              ${option}
            </option>`,
        )}
      </select>
    </div>
    <button type="submit">Filter</button>
  </form>`;
  return {
    title: 'Board',
    nav: 'board',
    intro,
    items,
    region: (items) =>
      html`${items.find((item) => item.key === 'counts')?.html}
        <table class="todos">
          <caption class="sr-only">
            Todos, newest first
          </caption>
          ${TODO_TABLE_HEAD}
          <tbody id="live-list" sse-swap="new" hx-swap="afterbegin">
            ${items.filter((item) => item.listed).map((item) => item.html)}
          </tbody>
        </table>`,
  };
};

/** How many of the shown todos each queue has in each state. */
function counts(todos: Todo[]) {
  const byQueue = new Map<string, Map<string, number>>();
  for (const todo of todos) {
    const states = byQueue.get(todo.queue) ?? new Map<string, number>();
    states.set(todo.state, (states.get(todo.state) ?? 0) + 1);
    byQueue.set(todo.queue, states);
  }
  const states = TODO_STATES.filter((s) => todos.some((todo) => todo.state === s));
  if (byQueue.size === 0)
    return html`<p ${liveAttrs('counts')} class="summary">No todo matches.</p>`;
  // Seven states do not fit a phone's width: the table scrolls on its own, not the page.
  return html`<div ${liveAttrs('counts')} class="scrolls">
    <table class="counts">
      <caption>
        By queue and state${todos.length >= SHOWN ? ` (the newest ${SHOWN})` : ''}
      </caption>
      <thead>
        <tr>
          <th scope="col">Queue</th>
          ${states.map((s) => html`<th scope="col">${s}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${[...byQueue]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(
            ([queue, n]) =>
              html`<tr>
                <th scope="row">
                  <a href="/todos?queue=${encodeURIComponent(queue)}&amp;state=all">${queue}</a>
                </th>
                ${states.map((s) => html`<td>${n.get(s) ?? ''}</td>`)}
              </tr>`,
          )}
      </tbody>
    </table>
  </div>`;
}

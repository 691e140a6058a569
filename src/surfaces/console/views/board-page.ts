import { listQueues, listTodos, TODO_STATES, type Queue, type Todo } from '../../../data/index.js';
import { html } from '../../../kit/pages/html.js';
import { mayDecide } from './approval-card.js';
import { liveAttrs } from '../../../kit/pages/live-attrs.js';
import type { LiveItem, PageLoader } from '../../../kit/pages/page-view.js';
import { queueLimitsTable } from './queue-limits-table.js';
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
  const [listed, limited] = await Promise.all([
    listTodos(sql, web.actor, { queue, state, limit: SHOWN }),
    listQueues(sql, web.actor, { limitedOnly: true }),
  ]);
  const todos = listed.filter((todo) => todo.kind !== 'approval' || mayDecide(todo, web.actor));
  const items: LiveItem[] = [
    {
      key: 'limits',
      listed: false,
      html: queueLimitsTable(limited.filter((shown) => !queue || shown.name === queue)),
    },
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
    </form>
    ${
      web.actor.kind === 'human' && web.actor.principal.is_admin
        ? limitsForm(
            queue,
            limited.find((shown) => shown.name === queue),
            web.csrf,
          )
        : ''
    }`;
  return {
    title: 'Board',
    nav: 'board',
    intro,
    items,
    region: (items) =>
      html`${items.find((item) => item.key === 'limits')?.html}
        ${items.find((item) => item.key === 'counts')?.html}
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

/**
 * Admins set a queue's limits here: both as the form shows them, a blank one cleared (filtered
 * to a queue, the form shows its limits as they are). Rendered once with the page (outside the
 * live region), so that a refresh never wipes what is typed.
 */
function limitsForm(queue: string | undefined, current: Queue | undefined, csrf: string) {
  return html`<details class="limits-form">
    <summary>Set a queue’s limits</summary>
    <form class="filters" method="post" action="/queues/limits">
      <input type="hidden" name="_csrf" value="${csrf}" />
      <div class="filter">
        <label for="limits-queue">Queue</label>
        <input id="limits-queue" name="queue" value="${queue ?? ''}" required maxlength="64" />
      </div>
      <div class="filter">
        <label for="limits-in-flight">At most in flight</label>
        <input
          id="limits-in-flight"
          name="max_in_flight"
          value="${current?.max_in_flight ?? ''}"
          inputmode="numeric"
          pattern="[1-9][0-9]*"
          placeholder="no limit"
        />
      </div>
      <div class="filter">
        <label for="limits-claims">At most claims</label>
        <input
          id="limits-claims"
          name="max_claims"
          value="${current?.max_claims ?? ''}"
          inputmode="numeric"
          pattern="[1-9][0-9]*"
          placeholder="no limit"
        />
      </div>
      <div class="filter">
        <label for="limits-window">per</label>
        <select id="limits-window" name="claims_window">
          <option value="hour">hour</option>
          <option value="day" ${current?.claims_window === 'day' ? 'selected' : ''}>day</option>
        </select>
      </div>
      <button type="submit">Set limits</button>
    </form>
  </details>`;
}

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

import { quarantineReasons } from '../../../data/deliveries/read-deliveries.js';
import { listTodos, type Todo } from '../../../data/index.js';
import { html } from '../../../kit/pages/html.js';
import { liveAttrs } from '../../../kit/pages/live-attrs.js';
import type { PageLoader } from '../../../kit/pages/page-view.js';
import { cancelForm, releaseForm } from './todo-page.js';
import { timeTag } from '../../../kit/pages/time-tag.js';

/** `/quarantine`: what waits for a human to vouch for it, and why (its delivery's note). */
export const quarantinePage: PageLoader = async ({ sql, web }) => {
  const todos = await listTodos(sql, web.actor, { state: 'quarantined', limit: 200 });
  // The delivery that made each todo says why it was not trusted, whichever provider sent it.
  const reasons = await quarantineReasons(
    sql,
    todos.map((todo) => todo.id),
  );
  const items = [
    {
      key: 'summary',
      listed: false,
      html: html`<p ${liveAttrs('summary')} class="summary">
        ${
          todos.length === 0
            ? 'Nothing is quarantined.'
            : `${todos.length} todo${todos.length === 1 ? ' waits' : 's wait'} for a human to release ${todos.length === 1 ? 'it' : 'them'}.`
        }
      </p>`,
    },
    ...todos.map((todo) => ({
      key: `todo-${todo.id}`,
      listed: true,
      html: quarantinedCard(todo, reasons.get(todo.id) ?? null, web.csrf),
    })),
  ];
  return {
    title: 'Quarantine',
    nav: 'quarantine',
    items,
    region: (items) =>
      html`${items.find((item) => item.key === 'summary')?.html}
        <div id="live-list" class="cards" sse-swap="new" hx-swap="afterbegin">
          ${items.filter((item) => item.listed).map((item) => item.html)}
        </div>`,
  };
};

function quarantinedCard(todo: Todo, why: string | null, csrf: string) {
  return html`<article
    ${liveAttrs(`todo-${todo.id}`)}
    class="card"
    data-item
    tabindex="-1"
    aria-labelledby="q-${todo.id}-title"
  >
    <h2 id="q-${todo.id}-title" class="question">
      <a href="/todos/${todo.id}">#${todo.id}</a> <span>${todo.title}</span>
    </h2>
    <p class="facts">
      on <span class="queue">${todo.queue}</span> · from ${todo.attributed_to} ·
      ${timeTag(todo.created_at)}
    </p>
    <p class="why"><strong>Why:</strong> ${why ?? 'its sender is not trusted'}</p>
    ${
      todo.body
        ? html`<pre class="preview" tabindex="0" aria-label="Body of #${todo.id}">
${todo.body}</pre>`
        : ''
    }
    <div class="buttons">
      ${releaseForm(todo.id, csrf, '/quarantine')} ${cancelForm(todo.id, csrf, '/quarantine')}
    </div>
  </article>`;
}

import {
  getTodoWithHistory,
  notFound,
  type HeldBack,
  type Todo,
  type TodoEvent,
} from '../../../data/index.js';
import { html, safeHref, type Html } from '../../../kit/pages/html.js';
import { mayDecide } from './approval-card.js';
import { liveAttrs } from '../../../kit/pages/live-attrs.js';
import type { PageLoader } from '../../../kit/pages/page-view.js';
import { stateBadge } from './todo-row.js';
import { timeTag } from '../../../kit/pages/time-tag.js';

/** `/todos/:id`: every field, the whole history, and what a human may do with it. */
export const todoPage: PageLoader = async ({ sql, web }, params) => {
  const id = Number(params.id);
  const { todo, history, held_back } = await getTodoWithHistory(sql, web.actor, id);
  if (todo.kind === 'approval' && !mayDecide(todo, web.actor))
    throw notFound(`todo #${id} not found`);
  const next = `/todos/${id}`;
  const items = [
    { key: 'fields', listed: false, html: fields(todo, held_back) },
    { key: 'actions', listed: false, html: actions(todo, web.csrf, next) },
    { key: 'history', listed: false, html: historyTable(history) },
  ];
  // Under the history, as a conversation's reply box is: the todo's title comes first.
  const outro = html`<form class="reply" method="post" action="/todos/${id}/reply">
    <input type="hidden" name="_csrf" value="${web.csrf}" />
    <label for="reply-text">Reply</label>
    <textarea id="reply-text" name="text" rows="3" maxlength="16384" required></textarea>
    <button type="submit">Reply</button>
  </form>`;
  return {
    title: `Todo #${id}`,
    nav: 'board',
    outro,
    items,
    region: (items) => html`${items.map((item) => item.html)}`,
  };
};

function field(name: string, value: Html | string | number | null | undefined): Html {
  return html`<div>
    <dt>${name}</dt>
    <dd>${value === null || value === undefined || value === '' ? '—' : value}</dd>
  </div>`;
}

function fields(todo: Todo, heldBack: HeldBack | null): Html {
  const url = safeHref(todo.url);
  return html`<section ${liveAttrs('fields')} class="todo" aria-labelledby="todo-title">
    <h2 id="todo-title" class="title">${todo.title}</h2>
    <dl class="fields">
      ${field('state', stateBadge(todo))}
      ${
        heldBack
          ? field(
              'held back',
              html`its queue is at its limit of
              ${heldBack.reason === 'max_in_flight' ? 'todos in flight' : 'claims'}; it may next be
              claimed at ${timeTag(heldBack.next_at)}`,
            )
          : ''
      }
      ${field('queue', todo.queue)} ${field('kind', todo.kind)} ${field('source', todo.source)}
      ${field('url', url ? html`<a href="${url}" rel="noreferrer">${url}</a>` : todo.url)}
      ${field('attributed to', todo.attributed_to)} ${field('assignee', todo.assignee)}
      ${field('claimed by', todo.claimed_by)}
      ${field('lease expires', todo.lease_expires_at ? timeTag(todo.lease_expires_at) : null)}
      ${field('retry at', todo.retry_at ? timeTag(todo.retry_at) : null)}
      ${field('attempt', `${todo.attempt} of ${todo.max_attempts}`)}
      ${field('idempotency key', todo.idempotency_key)} ${field('summary', todo.summary)}
      ${field(
        'result',
        todo.result === null || todo.result === undefined
          ? null
          : html`<pre>${JSON.stringify(todo.result, null, 2)}</pre>`,
      )}
      ${
        todo.kind === 'approval'
          ? html`${field('requested by', todo.requested_by)} ${field('request id', todo.request_id)}
            ${field(
              'about',
              todo.about_todo_id
                ? html`<a href="/todos/${todo.about_todo_id}">#${todo.about_todo_id}</a>`
                : null,
            )}
            ${field('expires', timeTag(todo.expires_at))} ${field('verdict', todo.verdict)}
            ${field('decided by', todo.decided_by)}
            ${field('decided at', todo.decided_at ? timeTag(todo.decided_at) : null)}`
          : ''
      }
      ${field('created', timeTag(todo.created_at))} ${field('updated', timeTag(todo.updated_at))}
    </dl>
    ${todo.body ? html`<pre class="body" tabindex="0" aria-label="Body">${todo.body}</pre>` : ''}
  </section>`;
}

/** What a human may do now: cancel what nobody works on, release a quarantined todo, decide an approval. */
function actions(todo: Todo, csrf: string, next: string): Html {
  const cancelable = ['pending', 'failed', 'quarantined'].includes(todo.state);
  const forms: Html[] = [];
  if (todo.kind === 'approval' && todo.state === 'pending')
    forms.push(
      html`<p><a class="button" href="/approvals/${todo.id}">Decide approval #${todo.id}</a></p>`,
    );
  if (todo.state === 'quarantined') forms.push(releaseForm(todo.id, csrf, next));
  if (cancelable) forms.push(cancelForm(todo.id, csrf, next));
  return html`<div ${liveAttrs('actions')} class="actions">
    ${forms.length ? forms : html`<p class="quiet">Nothing to do here: it ${todo.state === 'claimed' ? 'is being worked on' : 'is finished'}.</p>`}
  </div>`;
}

export function releaseForm(id: number, csrf: string, next: string): Html {
  return html`<form method="post" action="/todos/${id}/release-quarantine">
    <input type="hidden" name="_csrf" value="${csrf}" />
    <input type="hidden" name="next" value="${next}" />
    <button type="submit" class="allow">Release</button>
  </form>`;
}

export function cancelForm(id: number, csrf: string, next: string): Html {
  return html`<form method="post" action="/todos/${id}/cancel" class="cancel">
    <input type="hidden" name="_csrf" value="${csrf}" />
    <input type="hidden" name="next" value="${next}" />
    <label for="cancel-reason-${id}">Reason (optional)</label>
    <input id="cancel-reason-${id}" name="reason" maxlength="65536" />
    <button type="submit" class="deny">Cancel</button>
  </form>`;
}

function historyTable(history: TodoEvent[]): Html {
  return html`<section ${liveAttrs('history')} aria-labelledby="history-title">
    <h2 id="history-title">History</h2>
    <table class="history">
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Who</th>
          <th scope="col">Via</th>
          <th scope="col">What</th>
        </tr>
      </thead>
      <tbody>
        ${history.map(
          (event) =>
            html`<tr>
              <td>${timeTag(event.at)}</td>
              <td>${event.actor} <span class="quiet">(${event.actor_kind})</span></td>
              <td>${event.via}</td>
              <td>
                <strong>${event.action}</strong>
                ${event.data ? html`<code class="data">${JSON.stringify(event.data)}</code>` : ''}
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
  </section>`;
}

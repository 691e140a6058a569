import { listDeliveries } from '../../../data/deliveries/read-deliveries.js';
import { assertHuman } from '../../../data/index.js';
import { html } from '../../../kit/pages/html.js';
import { liveAttrs } from '../../../kit/pages/live-attrs.js';
import type { PageLoader } from '../../../kit/pages/page-view.js';
import { timeTag } from '../../../kit/pages/time-tag.js';

/**
 * `/deliveries`: recent deliveries of every provider (GitHub's and every source's) and what
 * became of each — "why did this make no todo?". The same read and the same rule as
 * GET /api/v1/deliveries.
 */
export const deliveriesPage: PageLoader = async ({ sql, web }) => {
  assertHuman(web.actor, 'read deliveries');
  const deliveries = await listDeliveries(sql, { limit: 100 });
  const items = deliveries.map((d) => ({
    key: `delivery-${d.id}`,
    listed: true,
    html: html`<tr ${liveAttrs(`delivery-${d.id}`)} data-item tabindex="-1">
      <td>${timeTag(d.received_at)}</td>
      <td>${d.source}</td>
      <td>${d.event}${d.action ? `.${d.action}` : ''}</td>
      <td>${d.subject ?? '—'}</td>
      <td>${d.actor ?? '—'}</td>
      <td><span class="disposition disposition-${d.disposition}">${d.disposition}</span></td>
      <td>${d.todo_id ? html`<a href="/todos/${d.todo_id}">#${d.todo_id}</a>` : '—'}</td>
      <td class="note">${d.note ?? ''}</td>
    </tr>`,
  }));
  return {
    title: 'Deliveries',
    nav: 'deliveries',
    items,
    region: (items) =>
      items.length === 0
        ? html`<p class="summary">No delivery has arrived yet.</p>`
        : html`<table class="deliveries">
            <caption class="sr-only">
              Recent deliveries of every provider, newest first
            </caption>
            <thead>
              <tr>
                <th scope="col">Received</th>
                <th scope="col">Source</th>
                <th scope="col">Event</th>
                <th scope="col">Subject</th>
                <th scope="col">Actor</th>
                <th scope="col">Disposition</th>
                <th scope="col">Todo</th>
                <th scope="col">Note</th>
              </tr>
            </thead>
            <tbody id="live-list" sse-swap="new" hx-swap="afterbegin">
              ${items.map((item) => item.html)}
            </tbody>
          </table>`,
  };
};

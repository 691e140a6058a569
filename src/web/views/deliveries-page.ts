import { assertHuman } from '../../ledger/index.js';
import { html } from '../html.js';
import { liveAttrs } from './live-attrs.js';
import type { PageLoader } from './page-view.js';
import { timeTag } from './time-tag.js';

interface DeliveryRow {
  id: number;
  delivery_id: string;
  event: string;
  action: string | null;
  repository: string | null;
  sender: string | null;
  disposition: string;
  todo_id: number | null;
  note: string | null;
  received_at: Date;
}

/** `/deliveries`: recent provider deliveries and what became of each — "why did this make no todo?". */
export const deliveriesPage: PageLoader = async ({ sql, web }) => {
  // The same rule and the same columns as GET /api/v1/deliveries (deliveries-routes.ts).
  assertHuman(web.actor, 'read GitHub deliveries');
  const deliveries = await sql<DeliveryRow[]>`
    select id, delivery_id, event, action, subject as repository, actor as sender, disposition,
           todo_id, note, received_at
    from deliveries where source = 'github' order by id desc limit 100`;
  const items = deliveries.map((d) => ({
    key: `delivery-${d.id}`,
    listed: true,
    html: html`<tr ${liveAttrs(`delivery-${d.id}`)} data-item tabindex="-1">
      <td>${timeTag(d.received_at)}</td>
      <td>${d.event}${d.action ? `.${d.action}` : ''}</td>
      <td>${d.repository ?? '—'}</td>
      <td>${d.sender ?? '—'}</td>
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
              Recent deliveries, newest first
            </caption>
            <thead>
              <tr>
                <th scope="col">Received</th>
                <th scope="col">Event</th>
                <th scope="col">Repository</th>
                <th scope="col">Sender</th>
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

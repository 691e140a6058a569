import { approvalWaitsFor, getTodo, listTodos, notFound, type Todo } from '../../../data/index.js';
import { html } from '../../../kit/pages/html.js';
import { approvalCard, approvalFacts, mayDecide } from './approval-card.js';
import { liveAttrs } from '../../../kit/pages/live-attrs.js';
import type { LiveItem, PageLoader, ViewContext } from '../../../kit/pages/page-view.js';

/** Finished approvals stay on the list this long, so that a card answered elsewhere says so. */
const RECENT_MS = 24 * 3600_000;
const RECENT_MAX = 20;

/**
 * `/`: the signed-in human's approvals — those waiting, newest first, then the recently finished,
 * most recently finished first. A new approval arrives on top; one decided while the page is open
 * changes in place, and takes its place among the finished at the next load.
 */
export const approvalsPage: PageLoader = async (context) => {
  const { sql, web } = context;
  const todos = await listTodos(sql, web.actor, {
    queue: 'approvals',
    state: 'all',
    mine: true,
    limit: 100,
  });
  const now = new Date();
  const own = todos.filter((todo) => approvalWaitsFor(todo, web.actor));
  const waiting = own.filter((todo) => todo.state === 'pending').sort((a, b) => b.id - a.id);
  const recent = own
    .filter(
      (todo) => todo.state !== 'pending' && now.getTime() - todo.updated_at.getTime() < RECENT_MS,
    )
    .sort((a, b) => b.updated_at.getTime() - a.updated_at.getTime() || b.id - a.id)
    .slice(0, RECENT_MAX);
  const shown = [...waiting, ...recent];
  const items: LiveItem[] = [
    {
      key: 'summary',
      listed: false,
      html: html`<p ${liveAttrs('summary')} class="summary">
        ${
          waiting.length === 0
            ? 'Nothing waits for you.'
            : `${waiting.length} approval${waiting.length === 1 ? ' waits' : 's wait'} for you.`
        }
      </p>`,
    },
    ...(await cards(context, shown, '/')),
  ];
  return {
    title: 'Approvals',
    nav: 'approvals',
    items,
    region: (items) =>
      html`${items.find((item) => item.key === 'summary')?.html}
        <div id="live-list" class="cards" sse-swap="new" hx-swap="afterbegin">
          ${items.filter((item) => item.listed).map((item) => item.html)}
        </div>`,
  };
};

/** `/approvals/:id`: one approval, for its human (or an admin); anyone else is told it does not exist. */
export const approvalPage: PageLoader = async (context, params) => {
  const id = Number(params.id);
  const todo = await getTodo(context.sql, context.web.actor, id);
  if (!mayDecide(todo, context.web.actor)) throw notFound(`approval #${id} not found`);
  const items = await cards(context, [todo], `/approvals/${id}`);
  return {
    title: `Approval #${id}`,
    nav: 'approvals',
    items,
    intro: html`<p><a href="/todos/${id}">Its whole history</a></p>`,
    region: (items) => html`${items.map((item) => item.html)}`,
  };
};

async function cards(context: ViewContext, todos: Todo[], next: string): Promise<LiveItem[]> {
  const now = new Date();
  return Promise.all(
    todos.map(async (todo) => ({
      key: `approval-${todo.id}`,
      listed: true,
      html: approvalCard(await approvalFacts(context, todo), {
        csrf: context.web.csrf,
        next,
        now,
      }),
    })),
  );
}

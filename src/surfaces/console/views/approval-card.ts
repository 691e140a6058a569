import {
  getTodo,
  getTodoWithHistory,
  LedgerError,
  type Actor,
  type Todo,
  type TodoEvent,
} from '../../../data/index.js';
import { html, safeHref, type Html } from '../../../kit/pages/html.js';
import { liveAttrs } from '../../../kit/pages/live-attrs.js';
import type { ViewContext } from '../../../kit/pages/page-view.js';
import { timeTag } from '../../../kit/pages/time-tag.js';

/** The facts a card shows besides the approval itself. */
export interface ApprovalFacts {
  todo: Todo;
  /** The todo it is about, when there is one the human may see. */
  about: Todo | null;
  /** How it ended: the history event of its verdict or cancellation. */
  outcome: TodoEvent | null;
}

const ENDINGS = new Set(['approved', 'denied', 'canceled', 'expired']);

/**
 * Approvals are for their assignee to decide (or an admin): the console shows another human's
 * approval to nobody else, as if it did not exist (the ledger refuses their verdict anyway).
 */
export function mayDecide(todo: Todo, actor: Actor): boolean {
  return todo.kind === 'approval' && (todo.assignee === actor.name || !!actor.principal?.is_admin);
}

/** Everything a card needs; a finished approval never changes, so its facts are cached. */
export async function approvalFacts(context: ViewContext, todo: Todo): Promise<ApprovalFacts> {
  const key = `facts:${todo.id}:${todo.updated_at.getTime()}`;
  const cached = context.cache.get(key) as ApprovalFacts | undefined;
  if (cached) return cached;
  const { sql, web } = context;
  let outcome: TodoEvent | null = null;
  if (todo.state !== 'pending') {
    const { history } = await getTodoWithHistory(sql, web.actor, todo.id);
    outcome = history.findLast((event) => ENDINGS.has(event.action)) ?? null;
  }
  let about: Todo | null = null;
  if (todo.about_todo_id != null) {
    const aboutKey = `about:${todo.about_todo_id}`;
    about = (context.cache.get(aboutKey) as Todo | undefined) ?? null;
    if (!about) {
      about = await getTodo(sql, web.actor, todo.about_todo_id).catch((error: unknown) => {
        if (error instanceof LedgerError) return null;
        throw error;
      });
      if (about) context.cache.set(aboutKey, about);
    }
  }
  const facts = { todo, about, outcome };
  if (todo.state !== 'pending') context.cache.set(key, facts);
  return facts;
}

/** An approval as a card: the question, its full input, who asks and about what, and the verdict buttons. */
export function approvalCard(
  facts: ApprovalFacts,
  { csrf, next, now = new Date() }: { csrf: string; next: string; now?: Date },
): Html {
  const { todo, about } = facts;
  const session = typeof todo.meta.channel_session === 'string' ? todo.meta.channel_session : null;
  const open = todo.state === 'pending' && !!todo.expires_at && todo.expires_at > now;
  const url = safeHref(about?.url ?? todo.url);
  return html`<article
    ${liveAttrs(`approval-${todo.id}`)}
    class="card approval ${open ? 'is-open' : 'is-closed'}"
    data-item
    data-approval="${todo.id}"
    tabindex="-1"
    aria-labelledby="approval-${todo.id}-title"
  >
    <h2 id="approval-${todo.id}-title" class="question">
      <a href="/approvals/${todo.id}">#${todo.id}</a> <span>${todo.title}</span>
    </h2>
    <p class="facts">
      asked by <strong>${todo.requested_by}</strong>${
        session
          ? html` <span class="session" title="${session}">(session ${session.slice(0, 8)})</span>`
          : ''
      }
      ${
        about
          ? html`· about <a href="/todos/${about.id}">#${about.id}</a> on
              <span class="queue">${about.queue}</span> — ${about.title}`
          : ''
      }
      ${url ? html`· <a href="${url}" rel="noreferrer">${linkLabel(url)}</a>` : ''}
    </p>
    <p class="times">
      asked ${timeTag(todo.created_at)}
      ${open ? html`· expires <span data-countdown>${timeTag(todo.expires_at)}</span>` : ''}
    </p>
    ${
      todo.body
        ? html`<pre class="preview" tabindex="0" aria-label="Input of approval #${todo.id}">
${todo.body}</pre>`
        : ''
    }
    ${open ? verdictForm(todo.id, csrf, next) : outcomeLine(facts)}
  </article>`;
}

function verdictForm(id: number, csrf: string, next: string): Html {
  return html`<form
    class="verdict"
    method="post"
    action="/approvals/${id}/decide"
    hx-post="/approvals/${id}/decide"
    hx-target="closest article"
    hx-swap="outerHTML"
  >
    <input type="hidden" name="_csrf" value="${csrf}" />
    <input type="hidden" name="next" value="${next}" />
    <label for="note-${id}">Note (optional)</label>
    <textarea id="note-${id}" name="note" rows="2" maxlength="65536"></textarea>
    <div class="buttons">
      <button type="submit" name="verdict" value="allow" class="allow" data-verdict="allow">
        Allow
      </button>
      <button type="submit" name="verdict" value="deny" class="deny" data-verdict="deny">
        Deny
      </button>
    </div>
  </form>`;
}

/** A finished approval says how it ended: who, when, via what (from its history). */
function outcomeLine({ todo, outcome }: ApprovalFacts): Html {
  const via = outcome ? html` via <span class="via">${outcome.via}</span>` : '';
  if (todo.state === 'done') {
    const word = todo.verdict === 'allow' ? 'allowed' : 'denied';
    return html`<p class="outcome ${word}" role="status">
      <strong>${word}</strong> by <span class="who">${todo.decided_by}</span>${via}
      ${timeTag(todo.decided_at)} ${todo.summary ? html`<q class="note">${todo.summary}</q>` : ''}
    </p>`;
  }
  if (todo.state === 'canceled') {
    const by = outcome ? html` by <span class="who">${outcome.actor}</span>${via}` : '';
    return html`<p class="outcome canceled" role="status">
      <strong>canceled</strong>${todo.summary ? html` — ${todo.summary}` : ''}${by}
      ${timeTag(outcome?.at ?? todo.updated_at)}
    </p>`;
  }
  return html`<p class="outcome canceled" role="status">
    <strong>expired</strong> without a verdict ${timeTag(todo.expires_at)}
  </p>`;
}

function linkLabel(url: string): string {
  const match = /github\.com\/[^/]+\/[^/]+\/(issues|pull)\/(\d+)/.exec(url);
  if (match) return `${match[1] === 'pull' ? 'pull request' : 'issue'} #${match[2]}`;
  return 'link';
}

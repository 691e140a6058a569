import { Router, type Request, type RequestHandler, type Response } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import type { TokenCache } from '../../kit/http/token-cache.js';
import type { PublicAddress } from '../../kit/http/public-address.js';
import type { TodoService } from '../../todos/create-todo-service.js';
import { forbidden, LedgerError, notFound } from '../../data/ledger-error.js';
import { reactivateHuman } from '../../data/principals/deactivate-human.js';
import { createAgent, revokeAgent } from '../../data/principals/principals.js';
import { vendPrincipal } from '../../data/principals/vend-principal.js';
import { setQueueLimits } from '../../data/queues/queue-limits.js';
import { getTodo } from '../../data/todos/get-todo.js';
import { findPage, waitingApprovals } from './console-pages.js';
import { html } from '../../kit/pages/html.js';
import { revisionOf, type RenderPage } from '../../kit/pages/render-page.js';
import { approvalCard, approvalFacts, mayDecide } from './views/approval-card.js';
import { agentVendedBody } from './views/agent-vended.js';
import { humanReactivatedBody } from './views/humans-table.js';
import { problemBody } from '../../kit/pages/sign-in-page.js';
import {
  localPath,
  ownOrigin,
  sameToken,
  webRequestOf,
  type WebRequest,
} from '../../kit/pages/web-request.js';

export interface PageRouteOptions {
  sql: postgres.Sql;
  todos: TodoService;
  render: RenderPage;
  /** A new agent's .mcp.json names the server by it. */
  address: PublicAddress;
  tokens: TokenCache;
}

const Id = z.object({
  id: z
    .string()
    .regex(/^[1-9][0-9]{0,14}$/)
    .transform(Number),
});
const Text = z.string().max(65_536);
const Next = z.string().max(2048).optional();
const DecideForm = z.object({
  verdict: z.enum(['allow', 'deny']),
  note: Text.optional(),
  next: Next,
});
const CancelForm = z.object({ reason: Text.optional(), next: Next });
const NextForm = z.object({ next: Next });
const ReplyForm = z.object({ text: z.string().max(65_536) });
const AgentForm = z.object({ name: z.string().max(200), queues: z.string().max(10_000) });
/** A limit as a form sends it: digits, or blank for none. */
const FormLimit = z
  .string()
  .trim()
  .regex(/^([1-9][0-9]{0,6})?$/, 'a limit is a whole number from 1, or blank for none')
  .transform((text) => (text === '' ? null : Number(text)));
const LimitsForm = z.object({
  queue: z.string().trim().max(200),
  max_in_flight: FormLimit,
  max_claims: FormLimit,
  claims_window: z.enum(['hour', 'day']),
});

/** JSON for a header: a header holds no line break and no character past Latin-1 (a reason may). */
const asciiJson = (value: unknown) =>
  JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );

/** htmx asks for a fragment; a form without JavaScript gets a 303 to a page. */
const fromHtmx = (req: Request) => req.get('hx-request') === 'true';
const blankToNull = (text: string | undefined) => (text?.trim() ? text : null);

/**
 * Every state-changing request of the console: a live session (else the sign-in page), an
 * `Origin` that is the console's own, and the session's CSRF token. A refusal changes nothing.
 */
export function guardChanges(publicUrl: string | undefined, render: RenderPage): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'POST') return next();
    const web = webRequestOf(res);
    if (!web) {
      if (fromHtmx(req)) return res.set('hx-redirect', '/sign-in').status(204).end();
      return res.redirect(303, '/sign-in');
    }
    const refuse = (message: string) =>
      render(res, { status: 403, title: 'Refused', body: problemBody(message) });
    if (req.get('origin') !== ownOrigin(req, publicUrl))
      return refuse(
        'Refused: this form was not sent from switchboard’s own pages. Nothing changed.',
      );
    if (!sameToken((req.body as Record<string, unknown> | undefined)?._csrf, web.csrf))
      return refuse(
        'Refused: the form’s security token is missing or stale. Reload the page and try again. Nothing changed.',
      );
    next();
  };
}

/**
 * The pages (GET) and the forms (POST) of the console, each a thin call onto the ledger's reads
 * or the todo service's verbs, which answer a todo the human may not see exactly as a missing one.
 */
export function pageRoutes({ sql, todos, render, address, tokens }: PageRouteOptions): Router {
  const router = Router({ caseSensitive: true });
  const signedIn = (res: Response): WebRequest => {
    const web = webRequestOf(res);
    if (!web) throw new Error('guarded route reached without a session');
    return web;
  };

  router.get(/.*/, async (req, res, next) => {
    const page = findPage(req.path);
    if (!page) return next();
    const web = webRequestOf(res);
    if (!web) return res.redirect(303, `/sign-in`);
    const query = new URL(req.originalUrl, 'http://x').searchParams;
    const context = { sql, web, cache: new Map() };
    const [view, waiting] = await Promise.all([
      page.load(context, page.params, query),
      waitingApprovals(sql, web.actor),
    ]);
    const path = req.originalUrl;
    const stream = `/live?page=${encodeURIComponent(path)}&rev=${revisionOf(view.items)}`;
    render(res, {
      title: view.title,
      nav: view.nav,
      stream,
      waiting: waiting.length,
      body: html`${view.intro ?? ''}
        <div id="live" sse-swap="snapshot" hx-swap="innerHTML">${view.region(view.items)}</div>
        ${view.outro ?? ''}`,
    });
  });

  router.post('/approvals/:id/decide', async (req, res) => {
    const web = signedIn(res);
    const { id } = Id.parse(req.params);
    const form = DecideForm.parse(req.body);
    const todo = await getTodo(sql, web.actor, id);
    if (!mayDecide(todo, web.actor)) throw notFound(`approval #${id} not found`);
    let flash: string | undefined;
    try {
      await todos.decide(web.actor, id, form.verdict, blankToNull(form.note));
    } catch (error) {
      // The first verdict wins: the loser is shown the winner, not an error page.
      if (!(error instanceof LedgerError) || error.code !== 'conflict') throw error;
      flash = error.message;
    }
    const next = localPath(form.next, `/approvals/${id}`);
    if (!fromHtmx(req)) return res.redirect(303, next === '/' ? `/#live-approval-${id}` : next);
    const decided = await getTodo(sql, web.actor, id);
    const card = approvalCard(await approvalFacts({ sql, web, cache: new Map() }, decided), {
      csrf: web.csrf,
      next,
    });
    if (flash) res.set('hx-trigger', asciiJson({ 'switchboard:flash': flash }));
    res.type('html').send(String(card));
  });

  router.post('/todos/:id/cancel', async (req, res) => {
    const web = signedIn(res);
    const { id } = Id.parse(req.params);
    const form = CancelForm.parse(req.body);
    await todos.cancel(web.actor, id, blankToNull(form.reason));
    res.redirect(303, localPath(form.next, `/todos/${id}`));
  });

  router.post('/todos/:id/release-quarantine', async (req, res) => {
    const web = signedIn(res);
    const { id } = Id.parse(req.params);
    const form = NextForm.parse(req.body);
    await todos.releaseQuarantined(web.actor, id);
    res.redirect(303, localPath(form.next, `/todos/${id}`));
  });

  router.post('/todos/:id/reply', async (req, res) => {
    const web = signedIn(res);
    const { id } = Id.parse(req.params);
    const { text } = ReplyForm.parse(req.body);
    // As POST /api/v1/todos/:id/reply does: a GitHub todo's reply is queued for its issue.
    await todos.reply(web.actor, id, text);
    res.redirect(303, `/todos/${id}`);
  });

  // The new agent's token is shown on the answer itself, once: it is never stored, so there is
  // nothing a redirect could show afterwards.
  router.post('/agents', async (req, res) => {
    const web = signedIn(res);
    const form = AgentForm.parse(req.body);
    const queues = form.queues.split(/[\s,]+/).filter(Boolean);
    const { principal: agent, token } = await vendPrincipal(sql, (tx) =>
      createAgent(tx, web.actor, { name: form.name.trim(), queues }),
    );
    render(res, {
      title: `Agent ${agent.name}`,
      nav: 'agents',
      waiting: (await waitingApprovals(sql, web.actor)).length,
      body: agentVendedBody(agent, token, address.url()),
    });
  });

  // Both limits as the form shows them: a blank one is cleared.
  router.post('/queues/limits', async (req, res) => {
    const web = signedIn(res);
    // The role before the form: anyone else learns nothing of what it takes.
    if (!web.actor.principal.is_admin) throw forbidden("only an admin may set a queue's limits");
    const form = LimitsForm.parse(req.body);
    await setQueueLimits(sql, web.actor, form.queue, {
      max_in_flight: form.max_in_flight,
      max_claims: form.max_claims,
      ...(form.max_claims !== null && { claims_window: form.claims_window }),
    });
    res.redirect(303, `/todos?queue=${encodeURIComponent(form.queue)}`);
  });

  // An admin's, on the agents page. The role is checked before anything else is looked at.
  router.post('/agents/humans/:name/deactivate', async (req, res) => {
    const web = signedIn(res);
    if (!web.actor.principal.is_admin) throw forbidden('only an admin may deactivate humans');
    await todos.deactivateHuman(web.actor, String(req.params.name));
    res.redirect(303, '/agents');
  });

  // The new token is shown on the answer itself, once, as a new agent's is.
  router.post('/agents/humans/:name/reactivate', async (req, res) => {
    const web = signedIn(res);
    if (!web.actor.principal.is_admin) throw forbidden('only an admin may reactivate humans');
    const { human, token } = await reactivateHuman(sql, web.actor, String(req.params.name));
    render(res, {
      title: `Human ${human.name}`,
      nav: 'agents',
      waiting: (await waitingApprovals(sql, web.actor)).length,
      body: humanReactivatedBody(human, token, address.url()),
    });
  });

  router.post('/agents/:name/revoke', async (req, res) => {
    const web = signedIn(res);
    await revokeAgent(sql, web.actor, String(req.params.name));
    tokens.clear();
    res.redirect(303, '/agents');
  });

  return router;
}

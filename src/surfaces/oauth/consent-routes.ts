import { Router, type Response } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import { clientAddressOf } from '../../kit/http/client-address.js';
import { createFailureLimiter } from '../../kit/http/failure-limiter.js';
import { HttpError } from '../../kit/http/http-error.js';
import type { TokenCache } from '../../kit/http/token-cache.js';
import {
  approveAuthorization,
  CLI_CLIENT_ID,
  createAgent,
  denyAuthorization,
  findAuthorization,
  findDeviceAuthorization,
  LedgerError,
  listPrincipals,
  revokeGrant,
  suggestAgentName,
  type Authorization,
  type AuthorizationRequest,
} from '../../data/index.js';
import type { Logger } from '../../platform/logger.js';
import type { RenderPage } from '../../kit/pages/render-page.js';
import { rememberReturn } from '../../kit/pages/return-after-sign-in.js';
import { consentBody, deviceAnsweredBody, deviceBody } from './consent-page.js';
import { problemBody } from '../../kit/pages/sign-in-page.js';
import { webRequestOf, type CookiePolicy, type WebRequest } from '../../kit/pages/web-request.js';
import type { OAuthEndpoints } from './oauth-endpoints.js';

export interface ConsentRoutesOptions {
  sql: postgres.Sql;
  log: Logger;
  tokens: TokenCache;
  render: RenderPage;
  cookies: CookiePolicy;
  /** The authorization server's addresses; undefined while OAuth is off. */
  endpoints: () => OAuthEndpoints | undefined;
  onGrantRevoked: (grantId: number) => void;
  /** Wrong user codes allowed per address per 15 minutes. */
  attemptLimit?: number;
}

const ConsentForm = z.object({
  decision: z.enum(['allow', 'deny']),
  agent: z.string().max(64).optional(),
  new_name: z.string().max(200).optional(),
  new_queues: z.string().max(10_000).optional(),
});
const DeviceForm = z.object({ user_code: z.string().max(20) });
const GrantId = z.object({
  id: z
    .string()
    .regex(/^[1-9][0-9]{0,14}$/)
    .transform(Number),
});

/**
 * The console's side of OAuth (mounted with the console's pages: a session, CSRF and Origin
 * checks, its error pages): the consent page a client sends its human to, the page where a
 * terminal's code is typed, and revoking a sign-in from the agents page.
 */
export function consentRoutes(options: ConsentRoutesOptions): Router {
  const { sql, log, tokens, render, cookies } = options;
  const routes = Router({ caseSensitive: true });
  const endpoints = () => {
    const found = options.endpoints();
    if (!found) throw new HttpError(404, 'not_found', 'OAuth sign-in is off on this server.');
    return found;
  };
  /** A human, or the sign-in page (which comes back here after). */
  const human = (res: Response, path: string): WebRequest | undefined => {
    const web = webRequestOf(res);
    if (!web) {
      rememberReturn(res, cookies, path);
      res.redirect(303, '/sign-in');
    }
    return web;
  };
  const page = (
    res: Response,
    status: number,
    title: string,
    body: ReturnType<typeof problemBody>,
  ) => render(res, { status, title, body });

  /** The page; after a refused answer, with the problem and what the human had chosen and typed. */
  const showConsent = async (
    res: Response,
    web: WebRequest,
    request: AuthorizationRequest,
    refused?: { problem: string; form: z.infer<typeof ConsentForm> },
  ) => {
    const cli = request.client_id === CLI_CLIENT_ID;
    const agents = cli
      ? []
      : (await listPrincipals(sql, web.actor, 'agent')).filter(
          (agent) => agent.owner === web.actor.name && !agent.revoked_at,
        );
    const newAgent = cli
      ? undefined
      : {
          name:
            refused?.form.new_name ??
            (await suggestAgentName(sql, request.client_metadata.client_name)),
          queues: refused?.form.new_queues ?? '',
          chosen: refused?.form.agent,
        };
    // The answer redirects to the client: the page's form may go there (CSP form-action).
    const target = request.redirect_uri ? new URL(request.redirect_uri) : undefined;
    if (target) {
      // An app's own scheme has no origin (`cursor://…` is "null"): the scheme is its source.
      const source = /^https?:$/.test(target.protocol) ? target.origin : target.protocol;
      res.set(
        'content-security-policy',
        String(res.get('content-security-policy')).replace(
          "form-action 'self'",
          `form-action 'self' ${source}`,
        ),
      );
    }
    render(res, {
      status: refused ? 400 : 200,
      title: cli
        ? 'Sign in the command line?'
        : `Let ${request.client_metadata.client_name ?? 'this client'} in?`,
      nav: 'agents',
      body: consentBody({
        request,
        agents,
        newAgent,
        cli,
        human: web.actor.name,
        csrf: web.csrf,
        problem: refused?.problem,
      }),
    });
  };

  const closed = (res: Response) =>
    page(
      res,
      410,
      'Sign-in request ended',
      problemBody(
        'This sign-in request was already answered or has expired. Start again from the app (or the terminal) that asked.',
      ),
    );

  routes.get('/oauth/consent/:id', async (req, res) => {
    endpoints();
    const web = human(res, req.originalUrl);
    if (!web) return;
    const request = await findAuthorization(sql, String(req.params.id));
    if (!request) throw new HttpError(404, 'not_found', 'There is no such sign-in request.');
    if (!request.open) return closed(res);
    await showConsent(res, web, request);
  });

  routes.post('/oauth/consent/:id', async (req, res) => {
    const { issuer } = endpoints();
    const web = webRequestOf(res)!;
    const id = String(req.params.id);
    const form = ConsentForm.parse(req.body);
    const request = await findAuthorization(sql, id);
    if (!request) throw new HttpError(404, 'not_found', 'There is no such sign-in request.');
    if (!request.open) return closed(res);
    if (form.decision === 'deny') {
      const denied = await denyAuthorization(sql, web.actor, id);
      log.info({ client_id: denied.client_id, human: web.actor.name }, 'a human denied a client');
      if (denied.flow === 'device') return page(res, 200, 'Denied', deviceAnsweredBody(false));
      return res.redirect(303, redirectWith(denied, { error: 'access_denied' }, issuer));
    }
    let approved;
    try {
      approved = await sql.begin(async (tx) => {
        let agent = form.agent;
        if (request.client_id !== CLI_CLIENT_ID && !agent) {
          const queues = (form.new_queues ?? '').split(/[\s,]+/).filter(Boolean);
          const name = (form.new_name ?? '').trim();
          agent = (await createAgent(tx, web.actor, { name, queues })).name;
        }
        return approveAuthorization(tx, web.actor, id, agent);
      });
    } catch (error) {
      // A bad new agent (a taken name, no queue) is said on the same page, with nothing changed.
      if (!(error instanceof LedgerError) || error.code === 'forbidden') throw error;
      return showConsent(res, web, request, { problem: error.message, form });
    }
    const { authorization, code, grant } = approved;
    log.info(
      { client_id: grant.client_id, grant: grant.id, human: web.actor.name },
      'a human let a client in',
    );
    if (authorization.flow === 'device')
      return page(res, 200, 'Signed in', deviceAnsweredBody(true));
    res.redirect(303, redirectWith(authorization, { code: code! }, issuer));
  });

  // Wrong codes per client address, counted with every server process's (auth_failures).
  const wrongCodes = createFailureLimiter({
    sql,
    name: 'device',
    limit: options.attemptLimit ?? 20,
    windowMs: 15 * 60_000,
  });
  const tooManyCodes = (res: Response, wait: number) => {
    res.set('retry-after', String(wait));
    page(
      res,
      429,
      'Too many attempts',
      problemBody('Too many wrong codes from your address; wait a few minutes.'),
    );
  };

  routes.get('/device', (req, res) => {
    endpoints();
    const web = human(res, req.originalUrl);
    if (!web) return;
    const typed =
      typeof req.query.user_code === 'string' ? req.query.user_code.slice(0, 20) : undefined;
    render(res, {
      title: 'Sign in a terminal',
      body: deviceBody({ csrf: web.csrf, userCode: typed }),
    });
  });

  routes.post('/device', async (req, res) => {
    endpoints();
    const web = webRequestOf(res)!;
    const address = clientAddressOf(req);
    const waiting = wrongCodes.retryAfter(address);
    if (waiting !== undefined) return tooManyCodes(res, waiting);
    const { user_code } = DeviceForm.parse(req.body);
    const found = await findDeviceAuthorization(sql, user_code);
    if (!found) {
      const wait = await wrongCodes.fail(address);
      if (wait !== undefined) return tooManyCodes(res, wait);
      return render(res, {
        status: 400,
        title: 'Sign in a terminal',
        body: deviceBody({
          csrf: web.csrf,
          userCode: user_code,
          problem:
            'No terminal is waiting with that code (it may have expired). Check it, or run switchboard login again.',
        }),
      });
    }
    res.redirect(303, `/oauth/consent/${found.id}`);
  });

  routes.post('/agents/sign-ins/:id/revoke', async (req, res) => {
    const web = webRequestOf(res)!;
    const { id } = GrantId.parse(req.params);
    const grant = await revokeGrant(sql, web.actor, id);
    tokens.clear();
    options.onGrantRevoked(grant.id);
    log.info({ grant: grant.id, human: web.actor.name }, 'a human revoked a sign-in');
    res.redirect(303, '/agents');
  });

  return routes;
}

/** The client's redirect URI with the answer (RFC 6749 §4.1.2), its state, and who answered (RFC 9207). */
function redirectWith(
  authorization: Authorization,
  answer: Record<string, string>,
  issuer: string,
): string {
  const url = new URL(authorization.redirect_uri!);
  for (const [key, value] of Object.entries(answer)) url.searchParams.set(key, value);
  if (authorization.state !== null) url.searchParams.set('state', authorization.state);
  url.searchParams.set('iss', issuer);
  return url.href;
}

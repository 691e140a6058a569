import express, { Router, type Request } from 'express';
import type postgres from 'postgres';
import type { Dispatcher } from '../../wakes/create-dispatcher.js';
import type { WakeHub } from '../../wakes/wake-hub.js';
import { HttpError } from '../../kit/http/http-error.js';
import type { PrincipalSlots } from '../../kit/http/principal-slots.js';
import type { PublicAddress } from '../../kit/http/public-address.js';
import type { RevocationWatch } from '../../kit/http/revocation-watch.js';
import type { TokenCache } from '../../kit/http/token-cache.js';
import type { Logger } from '../../platform/logger.js';
import type { TodoService } from '../../todos/create-todo-service.js';
import type { ChangeFeed } from '../../wakes/change-feed.js';
import { consoleAssets } from './console-assets.js';
import { liveStreams } from './live-streams.js';
import { guardChanges, pageRoutes } from './page-routes.js';
import type { Outbound } from '../../platform/egress/create-egress.js';
import { loadPushKeys } from '../../integrations/web-push/push-keys.js';
import { pushRoutes } from '../../integrations/web-push/push-routes.js';
import {
  createPushSender,
  type PushSender,
  type PushTuning,
} from '../../integrations/web-push/push-sender.js';
import { pageRenderer, type RenderPage } from '../../kit/pages/render-page.js';
import { securityHeaders } from '../../kit/pages/security-headers.js';
import { serviceWorkerRoute } from '../../integrations/web-push/service-worker-route.js';
import type { GitHubSignIn } from './github-sign-in.js';
import { signInRoutes } from './sign-in-routes.js';
import { webErrorHandler } from './web-error-handler.js';
import { readWebSession, webRequestOf, type CookiePolicy } from '../../kit/pages/web-request.js';

const CONSOLE_PATH =
  /^\/(?:$|approvals\/|todos(?:$|\/)|quarantine$|deliveries$|agents(?:$|\/)|queues\/|live$|push\/|sign-in(?:$|\/)|sign-out$|auth\/github(?:$|\/)|github\/setup(?:$|\/)|oauth\/consent\/|device$|slack(?:$|\/))/;

export interface WebConsoleOptions {
  sql: postgres.Sql;
  log: Logger;
  dispatcher: Dispatcher;
  /** The ledger's wakes, which Web Push hears (approvals, verdicts). */
  hub: WakeHub;
  /** The API's token cache: forgotten at once when an agent is revoked from a page. */
  tokens: TokenCache;
  /** Ends a page's stream when its session ends (signed out, expired, its human revoked). */
  revocations: RevocationWatch;
  /** The todo changes with side effects (a reply's write-back). */
  todos: TodoService;
  /** The console's address as browsers see it; https makes its cookies Secure and __Host-. */
  publicUrl?: string | undefined;
  /** The base of the URLs the console gives out (sign-in links, GitHub's callback, .mcp.json). */
  address: PublicAddress;
  /** "Sign in with GitHub": the App's OAuth client as it is now, and where GitHub is. */
  github?: GitHubSignIn | undefined;
  /** Tells open pages that the ledger may have changed (shared with the API's event streams). */
  feed: ChangeFeed;
  /** Failed sign-in attempts allowed per address per 15 minutes. */
  signInAttemptLimit?: number;
  /** How Web Push reaches the browsers' push services (src/platform/egress). */
  outbound: Outbound;
  /** Web Push: shorter sweeps and retries (tests). */
  push?: PushTuning;
  /** Open event streams per principal: a page's live stream takes one, as the API's do. */
  streams: PrincipalSlots;
  /**
   * Pages of other modules, with the console's session, guards and error pages (OAuth's consent,
   * the GitHub App's setup).
   */
  morePages?: ((render: RenderPage, cookies: CookiePolicy) => Router)[];
}

export interface WebConsole {
  /** Mounted at `/`: the pages, their streams, the sign-in and the assets. */
  routes: Router;
  /** Mounted under /api/v1 (bearer token): minting sign-in links for `switchboard open`. */
  apiRoutes: Router;
  /** How many page streams are open in this process. */
  openStreams(): number;
  /** Web Push's sender: stopped (and waited for) before the database closes. */
  push: PushSender;
  close(): void;
}

/**
 * The humans' web console (README "Web console", DESIGN §5.6): pages rendered on the server,
 * kept live by one server-sent-events stream each, every change a real form. An adapter like
 * the JSON API: it calls the same ledger functions, as the signed-in human, via `web`.
 */
export async function createWebConsole(options: WebConsoleOptions): Promise<WebConsole> {
  const { sql, log, dispatcher, publicUrl } = options;
  const cookies = { secure: publicUrl?.startsWith('https:') ?? false };
  const assets = consoleAssets();
  const keys = await loadPushKeys(sql);
  const push = createPushSender({
    sql,
    hub: options.hub,
    keys,
    subject: vapidSubject(publicUrl),
    log,
    outbound: options.outbound,
    tuning: options.push,
  });
  const render = pageRenderer(assets.urls, keys.publicKey);
  const streams = liveStreams({
    sql,
    dispatcher,
    feed: options.feed,
    log,
    revocations: options.revocations,
    slots: options.streams,
  });
  const signIn = signInRoutes({
    sql,
    log,
    cookies,
    address: options.address,
    github: options.github,
    render,
    attemptLimit: options.signInAttemptLimit,
  });

  const routes = Router({ caseSensitive: true });
  routes.use(assets.routes);
  routes.use(serviceWorkerRoute());
  const pages = Router({ caseSensitive: true });
  pages.use(securityHeaders);
  pages.use(readWebSession(sql, cookies));
  // Only a signed-in human's form is read: every change without a session is refused unread.
  const readForm = express.urlencoded({ extended: false, limit: '256kb', parameterLimit: 20 });
  pages.use((req, res, next) => (webRequestOf(res) ? readForm(req, res, next) : next()));
  pages.use(guardChanges(publicUrl, render));
  pages.use(signIn.routes);
  pages.use(streams.routes);
  pages.use(pushRoutes(sql));
  for (const more of options.morePages ?? []) pages.use(more(render, cookies));
  pages.use(
    pageRoutes({
      sql,
      todos: options.todos,
      render,
      address: options.address,
      tokens: options.tokens,
    }),
  );
  pages.use((req, _res, next) =>
    next(new HttpError(404, 'not_found', `There is no page at ${req.path}.`)),
  );
  pages.use(webErrorHandler(log, render));
  // Only the console's own paths: everything else (the API, /mcp, webhooks) passes by untouched —
  // but a browser that asks for a page at an address nobody serves gets the console's "Not found"
  // page, not the API's JSON.
  routes.use((req, res, next) =>
    CONSOLE_PATH.test(req.path) || wantsPage(req) ? pages(req, res, next) : next(),
  );
  return {
    routes,
    apiRoutes: signIn.apiRoutes,
    openStreams: () => streams.size(),
    push,
    close() {
      streams.closeAll();
    },
  };
}

/** A browser's GET outside the API and /mcp: it prefers HTML to JSON (curl's Accept of any type does not). */
function wantsPage(req: Request): boolean {
  return (
    (req.method === 'GET' || req.method === 'HEAD') &&
    !/^\/(?:api|mcp)(?:\/|$)/.test(req.path) &&
    req.accepts(['json', 'html']) === 'html'
  );
}

/**
 * Who runs this server, for the push services (VAPID's `sub`): its public https address, else
 * a mailto: that reaches nobody (push services ask only that it be a URL; Apple's refuses localhost).
 */
function vapidSubject(publicUrl: string | undefined): string {
  if (publicUrl?.startsWith('https:')) {
    const url = new URL(publicUrl);
    if (url.hostname !== 'localhost') return url.origin;
  }
  return 'mailto:switchboard@invalid';
}

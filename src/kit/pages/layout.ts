import { html, type Html } from './html.js';
import type { NavKey } from './page-view.js';

export interface LayoutOptions {
  title: string;
  nav: NavKey;
  /** The signed-in human (none on the sign-in and error pages). */
  human?: { name: string; csrf: string; waiting: number; pushKey?: string };
  /** The page's live stream (`/live?page=…&rev=…`); none: a page that is not live. */
  stream?: string;
  assets: AssetUrls;
  status?: Html;
  body: Html;
}

export interface AssetUrls {
  css: string;
  htmx: string;
  sse: string;
  console: string;
  icon: string;
}

const NAV: [NavKey, string, string][] = [
  ['approvals', '/', 'Approvals'],
  ['board', '/todos', 'Board'],
  ['quarantine', '/quarantine', 'Quarantine'],
  ['deliveries', '/deliveries', 'Deliveries'],
  ['agents', '/agents', 'Agents'],
  ['slack', '/slack', 'Slack'],
];

/** The waiting-approvals badge; also what the stream's `count` event carries. */
export function waitingBadge(waiting: number): Html {
  return html`<span data-count="${waiting}"
    >${waiting > 0 ? waiting : ''}<span class="sr-only"> waiting</span></span
  >`;
}

/**
 * Every console page. No inline script or style anywhere (the CSP forbids both): htmx's own
 * indicator style is turned off in its meta config, and the page's behaviour is /assets/console.js.
 */
export function layout(options: LayoutOptions): Html {
  const { title, nav, human, stream, assets } = options;
  const count = human?.waiting ? `(${human.waiting}) ` : '';
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta
          name="htmx-config"
          content='{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,"historyCacheSize":0,"selfRequestsOnly":true}'
        />
        <title>${count}${title} · switchboard</title>
        <link rel="icon" href="${assets.icon}" type="image/svg+xml" />
        <link rel="stylesheet" href="${assets.css}" />
        <script src="${assets.htmx}" defer></script>
        <script src="${assets.sse}" defer></script>
        <script src="${assets.console}" defer></script>
      </head>
      <body data-title="${title}" ${stream ? html`hx-ext="sse" sse-connect="${stream}"` : ''}>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top">
          <a class="brand" href="/">switchboard</a>
          ${
            human
              ? html`<nav aria-label="Console">
                    <ul>
                      ${NAV.map(
                        ([key, href, label]) =>
                          html`<li>
                            <a href="${href}" ${key === nav ? html`aria-current="page"` : ''}
                              >${label}${
                                key === 'approvals'
                                  ? html` <span id="waiting" class="badge" sse-swap="count"
                                      >${waitingBadge(human.waiting)}</span
                                    >`
                                  : ''
                              }</a
                            >
                          </li>`,
                      )}
                    </ul>
                  </nav>
                  <div class="who">
                    <span class="name">${human.name}</span>
                    ${
                      stream
                        ? html`<span id="live-status" class="live offline" role="status"
                            >offline</span
                          >`
                        : ''
                    }
                    <button
                      id="notify-button"
                      type="button"
                      data-push-key="${human.pushKey ?? ''}"
                      data-csrf="${human.csrf}"
                      hidden
                    >
                      Notify me
                    </button>
                    <form method="post" action="/sign-out">
                      <input type="hidden" name="_csrf" value="${human.csrf}" />
                      <button type="submit">Sign out</button>
                    </form>
                  </div>`
              : ''
          }
        </header>
        <div id="flash" class="flash" role="alert"></div>
        <main id="main" tabindex="-1">
          <h1>${title}</h1>
          ${options.body}
        </main>
        ${stream ? html`<div id="notify" hidden sse-swap="notify"></div>` : ''}
      </body>
    </html>`;
}

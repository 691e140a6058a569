import { createHash } from 'node:crypto';
import type { Response } from 'express';
import type { Html } from './html.js';
import { layout, type AssetUrls } from './layout.js';
import type { LiveItem, NavKey } from './page-view.js';
import { webRequestOf } from './web-request.js';

export interface PageOptions {
  status?: number;
  title: string;
  nav?: NavKey;
  body: Html;
  /** The page's live stream, for a live page. */
  stream?: string;
  /** How many approvals wait for the signed-in human (the title's count). */
  waiting?: number;
}

export type RenderPage = (res: Response, options: PageOptions) => void;

/** Sends a whole page in the layout, as the signed-in human (if any) sees it. */
export function pageRenderer(assets: AssetUrls, pushKey: string): RenderPage {
  return (res, options) => {
    const web = webRequestOf(res);
    const markup = layout({
      title: options.title,
      nav: options.nav ?? 'none',
      human: web
        ? { name: web.actor.name, csrf: web.csrf, waiting: options.waiting ?? 0, pushKey }
        : undefined,
      stream: options.stream,
      assets,
      body: options.body,
    });
    res
      .status(options.status ?? 200)
      .type('html')
      .set('cache-control', 'no-store')
      .send(String(markup));
  };
}

/** What a live page looked like when rendered: its stream sends a snapshot only if it differs. */
export function revisionOf(items: LiveItem[]): string {
  const hash = createHash('sha256');
  for (const item of items)
    hash.update(item.key).update('\0').update(String(item.html)).update('\0');
  return hash.digest('base64url').slice(0, 16);
}

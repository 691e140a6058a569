import type postgres from 'postgres';
import type { Html } from './html.js';
import type { WebRequest } from './web-request.js';

/** One piece of a page that the page's stream keeps up to date on its own (see live-attrs.ts). */
export interface LiveItem {
  key: string;
  html: Html;
  /** An entry of the page's list: when one appears, it goes on top of the list (`#live-list`). */
  listed: boolean;
}

export type NavKey =
  'approvals' | 'board' | 'quarantine' | 'deliveries' | 'agents' | 'slack' | 'none';

/** A console page: what it shows once (intro) and what its stream keeps live (items). */
export interface PageView {
  title: string;
  nav: NavKey;
  /** Forms and filters above the live region; rendered with the page, not streamed. */
  intro?: Html;
  /** Forms below it (a reply box under the history), rendered once: a snapshot never wipes them. */
  outro?: Html;
  items: LiveItem[];
  /** The live region made from its items: the page's body, and the stream's `snapshot`. */
  region: (items: LiveItem[]) => Html;
}

/** What a page's loader works with: the database, the signed-in human, and a render cache. */
export interface ViewContext {
  sql: postgres.Sql;
  web: WebRequest;
  /** Rendered fragments that cannot change any more (finished approvals), per page or stream. */
  cache: Map<string, unknown>;
}

export type PageLoader = (
  context: ViewContext,
  params: Record<string, string>,
  query: URLSearchParams,
) => Promise<PageView>;

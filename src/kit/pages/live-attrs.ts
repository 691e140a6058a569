import { html, type Html } from './html.js';

/**
 * What makes an element a live item of its page: an id, and the server-sent event named after
 * it, whose data replaces the element (outerHTML). The page's stream sends that event whenever
 * the item's markup changes; an item that leaves the page is replaced by an empty template.
 */
export function liveAttrs(key: string): Html {
  return html`id="live-${key}" sse-swap="live-${key}" hx-swap="outerHTML"`;
}

/** What replaces an item that is no longer on its page (an event's data cannot be empty). */
export const GONE = '<template data-gone></template>';

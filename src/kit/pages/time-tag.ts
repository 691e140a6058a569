import { html, type Html } from './html.js';

/**
 * A `<time>` with the exact UTC time as its text. The console's script turns it into "3 min ago"
 * or "in 12:04" and keeps it current; the server never renders relative times, so that a page's
 * markup changes only when what it shows changes (the stream sends only changed items).
 */
export function timeTag(at: Date | null | undefined): Html {
  if (!at) return html`<span>—</span>`;
  const iso = at.toISOString();
  return html`<time datetime="${iso}" data-relative
    >${iso.slice(0, 16).replace('T', ' ')} UTC</time
  >`;
}

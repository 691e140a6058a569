import { html as honoHtml, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

/** Markup that is safe to send: made by `html`, which escaped every value put into it. */
export type Html = HtmlEscapedString;

/**
 * The console's template tag (Hono's `html` helper): every interpolated string is escaped (`&`,
 * `<`, `>`, `"`, `'`), arrays are joined, `null`, `undefined` and booleans print nothing, and
 * only markup made by `html` itself goes in as it is. Templates here are synchronous, so the
 * result is never a promise.
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  const out = honoHtml(strings, ...values);
  if (out instanceof Promise) throw new Error('console templates take no promises');
  return out;
}

/** Markup switchboard wrote itself and has already escaped (e.g. joined fragments). */
export const trusted = (markup: string): Html => raw(markup);

/** A link only for http(s) URLs: a todo's `url` is free text, and `javascript:` must not be one. */
export function safeHref(url: string | null | undefined): string | undefined {
  return url && /^https?:\/\//i.test(url) ? url : undefined;
}

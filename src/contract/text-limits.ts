/**
 * How long the text a request carries may be, longer being refused (the server's request
 * schemas and the ledger apply them; the CLI says them in words before sending). What a todo
 * then keeps is shorter still: TITLE_MAX and BODY_MAX (neutralise-text.ts), past which text is cut.
 */

/** A body, summary, note or reason. */
export const TEXT_MAX = 65_536;

/** A title, or an approval's question. */
export const TITLE_REQUEST_MAX = 10_000;

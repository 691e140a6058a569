import { neutraliseLine, neutraliseText } from '../contract/neutralise-text.js';

// What jsonb cannot hold: a NUL, and a UTF-16 surrogate without its other half (which the
// ledger stores as U+FFFD in a title or body anyway).
// eslint-disable-next-line no-control-regex -- NUL is the point
const NUL = /\u0000/g;
const UNPAIRED_SURROGATE =
  /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const storable = (text: string) => text.replace(NUL, '').replace(UNPAIRED_SURROGATE, '\ufffd');

/** Longer strings are no login, URL, sha or state a provider sends. */
export const FACT_VALUE_MAX = 2048;

/**
 * Provider text as a delivery's facts keep it. A title-like line and a body-like text are
 * neutralised exactly as a todo's title and body are, so that a todo made from the facts is the
 * todo the raw text would have made (neutralising twice changes nothing); any other string is
 * cut to FACT_VALUE_MAX. All three are storable in jsonb.
 */
export const factLine = (text: string) => storable(neutraliseLine(text));
export const factText = (text: string) => storable(neutraliseText(text));
export const factValue = (text: string) => storable(text.slice(0, FACT_VALUE_MAX));

/**
 * The first line of a comment that is not blank, as a title shows it: taken from the raw text
 * and neutralised as a line (controls become spaces), which is what a title made from the raw
 * comment shows — a body's neutralising drops them instead.
 */
export const factFirstLine = (text: string) =>
  factLine(text.split('\n').find((line) => line.trim() !== '') ?? '');

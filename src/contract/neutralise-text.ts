/**
 * Provider and user text ends up inside agents' prompts — inside Claude Code's
 * `<channel …>content</channel>` element, which Claude Code does not escape. Neutralising it at
 * ingest means every later reader gets text that cannot close or open such an element, cannot
 * move the cursor or hide characters, and has a known size.
 */

// C0 controls (but tab and newline, handled per use), DEL, C1 controls, and the Unicode
// characters that break lines or reorder text (bidi overrides and isolates: "Trojan Source").
const CONTROL =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/g;
// `<channel`, `</channel`, `< / CHANNEL` …: the full-width `＜` reads the same and parses as text.
const CHANNEL_TAG = /<(\s*\/?\s*channel)/gi;

export const TITLE_MAX = 200;
export const BODY_MAX = 16_384;

/** One line, no controls, no channel tags, at most `max` characters. */
export function neutraliseLine(text: string, max = TITLE_MAX): string {
  const line = text
    .replace(CONTROL, ' ')
    .replace(/[\t\r\n]+/g, ' ')
    .replace(CHANNEL_TAG, '＜$1')
    .replace(/ {2,}/g, ' ')
    .trim();
  return truncate(line, max);
}

/** Multi-line text: keeps newlines and tabs, drops other controls and channel tags, bounded. */
export function neutraliseText(text: string, max = BODY_MAX): string {
  const clean = text.replace(/\r\n?/g, '\n').replace(CONTROL, '').replace(CHANNEL_TAG, '＜$1');
  return truncate(clean, max);
}

/** The first `max` characters of a text kept in a todo's history, cut between characters. */
export function excerpt(text: string, max = 500): string {
  return truncate(text, max);
}

function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  // Only the head is split into characters: a 20 MB body would otherwise become an array of
  // twenty million strings. max + 1 characters take at most 2 * max + 2 UTF-16 units.
  const chars = Array.from(text.slice(0, 2 * max + 2));
  return chars.length <= max ? text : chars.slice(0, max - 1).join('') + '…';
}

/**
 * A channel's `input_preview` is display text, not the tool's input. Claude Code (2.1.211 and
 * later) renders each top-level field as `{ "key": value, … }` with JSON's own quotes, folds runs
 * of whitespace, keeps the start and end of a long value around `⋯ N code points elided ⋯`,
 * puts `(value unserializable)` for a value it cannot render and `[REDACTED]` for a credential;
 * older clients cut the JSON at 200 units and add `…`. This reads back what it can: the fields
 * when the text is exactly such a rendering, the visible pieces of shortened strings, and why a
 * preview is not to be allowed from (`lossy`). Deny and ask rules may still match what is read.
 */

export interface PreviewReading {
  /** The fields read whole. */
  input: Record<string, unknown>;
  /** Strings Claude Code shortened: their visible start and end. */
  fragments: Record<string, string[]>;
  /** Why nothing may be allowed from this preview, or null when it reads whole. */
  lossy: string | null;
}

const ELIDED = /(?:\\n|\s)*⋯ \d+ code points? elided ⋯(?:\\n|\s)*/g;
const FIELDS_ELIDED = /,?\s*⋯[^⋯]*\bfields? elided\b[^⋯]*⋯/g;
const CUT = '\uE000'; // stands for an elided span while the JSON is parsed
const UNSERIALIZABLE = '(value unserializable)';
// Fields whose string value a rule reads, for previews that do not parse.
const KEY_FIELDS =
  /"(command|file_path|notebook_path|path|url|pattern|subagent_type|skill)"\s*:\s*"((?:[^"\\]|\\[\s\S])*)/g;

export function readPreview(preview: string): PreviewReading {
  const marked = preview.replace(ELIDED, CUT).replace(FIELDS_ELIDED, '');
  const shortened = marked !== preview;
  const whole = shortened ? null : parseObject(preview);
  if (whole && rendersAs(whole, preview)) return checked(whole, null);
  const parsed = parseObject(marked);
  if (parsed) {
    const reading = checked(parsed, shortened ? 'the preview was shortened by Claude Code' : null);
    return reading.lossy === null
      ? { ...reading, lossy: 'the preview is not in the shape Claude Code renders' }
      : reading;
  }
  const reading: PreviewReading = { input: {}, fragments: {}, lossy: null };
  for (const [, key, raw] of marked.matchAll(KEY_FIELDS))
    reading.fragments[key!] ??= pieces(unescape(raw!));
  reading.lossy =
    shortened || /…\s*$/.test(preview)
      ? 'the preview was shortened by Claude Code'
      : 'the preview is not in the shape Claude Code renders';
  return reading;
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** Exactly what Claude Code renders for these fields (so no key was doubled or hidden). */
function rendersAs(input: Record<string, unknown>, preview: string): boolean {
  if (JSON.stringify(input) === preview) return true;
  const fold = (text: string) => text.replace(/\s{2,}/g, ' ');
  const fields = Object.entries(input).map(
    ([key, value]) => `${fold(JSON.stringify(key))}: ${fold(JSON.stringify(value))}`,
  );
  return `{ ${fields.join(', ')} }` === preview;
}

function checked(fields: Record<string, unknown>, shortened: string | null): PreviewReading {
  const reading: PreviewReading = { input: {}, fragments: {}, lossy: shortened };
  for (const [key, value] of Object.entries(fields)) {
    if (value === UNSERIALIZABLE) reading.lossy ??= 'Claude Code could not serialise the preview';
    else if (typeof value === 'string' && value.includes(CUT))
      reading.fragments[key] = pieces(value);
    else reading.input[key] = value;
  }
  if (JSON.stringify(fields).includes('[REDACTED]'))
    reading.lossy ??= 'Claude Code masked a credential in the preview';
  return reading;
}

function pieces(text: string): string[] {
  return text
    .replace(/…\s*$/, CUT)
    .split(CUT)
    .filter((piece) => piece.trim() !== '');
}

function unescape(raw: string): string {
  try {
    return JSON.parse(`"${raw.replace(/\\$/, '')}"`) as string;
  } catch {
    return raw;
  }
}

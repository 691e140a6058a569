/**
 * Credentials in text: where they are, so that the ledger can withhold them before a todo is
 * stored (withhold-secrets.ts). The patterns are secretlint's recommended preset, kept and
 * released by its authors (GitHub, AWS, Slack, private keys, npm, OpenAI, Anthropic, Linear,
 * SendGrid, Shopify, 1Password, database URLs, basic auth in URLs); the rules below cover what it
 * has no rule for. Everything runs synchronously: a preset rule is a set of regular expressions
 * over the text it is handed, reporting each find's range. Its cost is mostly per call (some
 * 10–40 µs), not per character: look through many short texts at once.
 */
import { rules as presetRules } from '@secretlint/secretlint-rule-preset-recommend';

export interface FoundSecret {
  /** Where the credential is in the text, as UTF-16 offsets [start, end). */
  start: number;
  end: number;
  /** The rule that found it: `github`, `aws`, `slack`, `privatekey`, `jwt`, `switchboard`, … */
  rule: string;
}

/** The part of secretlint's rule API that the preset's rules use. */
interface RuleContext {
  createTranslator(): (messageId: string, props?: Record<string, unknown>) => string;
  report(descriptor: { message: string; range: readonly [number, number] }): void;
  ignore(): void;
}
interface PresetRule {
  meta: { id: string };
  create(
    context: RuleContext,
    options: Record<string, unknown>,
  ): { file(source: Record<string, string>): unknown };
}

// The AWS rule finds access key ids only when asked; they are half of a key pair.
const OPTIONS: Record<string, Record<string, unknown>> = {
  '@secretlint/secretlint-rule-aws': { enableIDScanRule: true },
};
// `secretlint-disable` comments would let the text itself turn detection off.
const LEFT_OUT = new Set(['@secretlint/secretlint-rule-filter-comments']);

let found: FoundSecret[] = [];
let rule = '';
// The values a rule names in its message, set by its translator just before it reports.
let named: unknown[] = [];
let content = '';

const context: RuleContext = {
  createTranslator: () => (messageId, props) => {
    named = Object.values(props ?? {});
    return messageId;
  },
  report({ range: [start, end] }) {
    // A rule's range is where its pattern matched; where it names the credential itself and
    // that starts inside the range (the AWS secret key's `KEY=value`: the value), the credential
    // is what it names.
    for (const value of named) {
      if (typeof value !== 'string' || value.length < 8) continue;
      const at = content.indexOf(value, start);
      if (at >= start && at < end) {
        found.push({ start: at, end: at + value.length, rule });
        return;
      }
    }
    found.push({ start, end, rule });
  },
  ignore() {},
};

const scanners = (presetRules as unknown as PresetRule[])
  .filter((preset) => !LEFT_OUT.has(preset.meta.id))
  .map((preset) => ({
    rule: preset.meta.id.replace(/^@secretlint\/secretlint-rule-/, ''),
    handler: preset.create(context, OPTIONS[preset.meta.id] ?? {}),
  }));

/**
 * What the preset has no rule for. Its releases since 12 have rules for the last two, but need
 * Node 22, and switchboard runs on Node 20: these follow them.
 */
const OWN_RULES: [rule: string, pattern: RegExp][] = [
  // switchboard's own tokens (src/data/principals/tokens.ts).
  ['switchboard', /(?<![A-Za-z0-9_-])sbk_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g],
  // A signed JSON Web Token: a header and claims that are JSON objects (`eyJ` is `{"`), and a
  // signature.
  [
    'jwt',
    /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}(?![A-Za-z0-9_-])/g,
  ],
  // A GitHub App installation token of the format GitHub announced for 2026: `ghs_`, the App's
  // id, a JWT.
  [
    'github',
    /(?<![A-Za-z0-9_])ghs_[0-9]{1,20}_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+(?![A-Za-z0-9_-])/g,
  ],
  // A GitLab personal, project or group access token.
  ['gitlab', /(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_-])/g],
];
/**
 * A value assigned to a name that says it is secret (`api_key=…`, `"client_secret": "…"`,
 * `password: …`), kept only when it looks random: at least 16 characters and 3.5 bits of
 * entropy per character (gitleaks' threshold for its generic rule), not words joined by `_-.`.
 */
const ASSIGNED =
  /(?:secret|token|passw(?:or)?d|pwd|api[_-]?key|access[_-]?key|auth|credential|private[_-]?key)[A-Za-z0-9_.-]*["']?\s*(?::|=>|=)\s*["']?([A-Za-z0-9+/=_~.-]{16,})/dgi;
const WORDS = /^(?:[a-z]+(?:[_.-][a-z]+)*|[A-Z]+(?:[_.-][A-Z]+)*)$/;
const MIN_ENTROPY = 3.5;
/**
 * A private key block cut short — a text cut to size, a paste broken off, a block split across
 * two texts — which the preset's rule, wanting the whole block, lets through: a first line with
 * no last line after it is withheld to the end of its text, a last line with no first line
 * before it from the start. A NUL ends a text: withhold-secrets.ts looks through several at once.
 */
const KEY_BEGIN = /-----BEGIN[ A-Z]*PRIVATE KEY(?: BLOCK)?-----/g;
const KEY_END = /-----END[ A-Z]*PRIVATE KEY(?: BLOCK)?-----/g;

function cutShortKeys(text: string, finds: FoundSecret[]): void {
  let start = 0;
  for (const part of text.split('\u0000')) {
    const begins = [...part.matchAll(KEY_BEGIN)].map((match) => match.index);
    const ends = [...part.matchAll(KEY_END)].map((match) => match.index + match[0].length);
    const open = begins.find((begin) => begin > (ends.at(-1) ?? -1));
    if (open !== undefined)
      finds.push({ start: start + open, end: start + part.length, rule: 'privatekey' });
    const closed = ends.find((end) => end <= (begins[0] ?? Infinity));
    if (closed !== undefined) finds.push({ start, end: start + closed, rule: 'privatekey' });
    start += part.length + 1;
  }
}

/** Every credential in `text`, in order, overlapping finds merged. */
export function findSecrets(text: string): FoundSecret[] {
  found = [];
  content = text;
  const source = { content: text, filePath: '', ext: '', contentType: 'text' };
  for (const scanner of scanners) {
    rule = scanner.rule;
    named = [];
    scanner.handler.file(source);
  }
  const finds = found;
  found = [];
  content = '';
  for (const [rule, pattern] of OWN_RULES) {
    for (const match of text.matchAll(pattern))
      finds.push({ start: match.index, end: match.index + match[0].length, rule });
  }
  if (text.includes('PRIVATE KEY')) cutShortKeys(text, finds);
  for (const match of text.matchAll(ASSIGNED)) {
    const [start, end] = match.indices![1]!;
    const value = match[1]!;
    if (!WORDS.test(value) && entropy(value) >= MIN_ENTROPY)
      finds.push({ start, end, rule: 'generic' });
  }
  return merged(finds);
}

/** Shannon entropy, in bits per character. */
function entropy(value: string): number {
  const counts = new Map<string, number>();
  for (const char of value) counts.set(char, (counts.get(char) ?? 0) + 1);
  let bits = 0;
  for (const count of counts.values()) {
    const p = count / value.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

/** Sorted by where they start; a find that overlaps the one before joins it. */
function merged(finds: FoundSecret[]): FoundSecret[] {
  finds.sort((a, b) => a.start - b.start || b.end - a.end);
  const out: FoundSecret[] = [];
  for (const find of finds) {
    const last = out.at(-1);
    if (last && find.start < last.end) last.end = Math.max(last.end, find.end);
    else out.push({ ...find });
  }
  return out;
}

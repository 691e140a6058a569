/**
 * Credentials never reach an agent's context, a page or a message: the text a todo is made of
 * has each one replaced by `[secret:ID]` before it is stored, and the value is kept sealed beside
 * the todo, for whoever may read the todo to fetch on purpose (`switchboard secret show ID`).
 */
import { randomBytes } from 'node:crypto';
import { findSecrets } from './find-secrets.js';
import { secretReference, WITHHELD } from './secret.js';

export { SECRET_ID, secretReference, WITHHELD } from './secret.js';

/** The alphabet of SECRET_ID. */
const ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789';

export interface WithheldSecret {
  id: string;
  /** The rule that found it (find-secrets.ts). */
  rule: string;
  value: string;
}

export interface Withholder {
  /** The text with each credential replaced by its reference. */
  withhold(text: string): string;
  /**
   * The same for several texts, looked through at once: the patterns' cost is mostly per call,
   * so a delivery's few dozen short strings cost about what one of them would.
   */
  withholdAll(texts: readonly string[]): string[];
  /** The credentials withheld so far, each value once. Empty when they are not kept. */
  readonly secrets: WithheldSecret[];
  /** How many credentials were withheld, kept or not. */
  readonly count: number;
}

// Between texts looked through at once. A find that reaches across it is cut there: each text
// has its part withheld.
const SEPARATOR = '\u0000';

/**
 * Withholds the credentials of one todo's texts: the same value met twice (in the title and the
 * body) has one id. With `keep` false nothing is kept and every credential reads `[secret:withheld]`.
 */
export function createWithholder({ keep }: { keep: boolean }): Withholder {
  const byValue = new Map<string, WithheldSecret>();
  let count = 0;
  const referenceTo = (value: string, rule: string) => {
    count++;
    if (!keep) return WITHHELD;
    let secret = byValue.get(value);
    if (!secret) byValue.set(value, (secret = { id: newSecretId(), rule, value }));
    return secretReference(secret.id);
  };
  const withholdAll = (texts: readonly string[]): string[] => {
    const joined = texts.join(SEPARATOR);
    const finds = findSecrets(joined);
    if (finds.length === 0) return [...texts];
    const out: string[] = [];
    let next = 0;
    let start = 0;
    for (const text of texts) {
      const end = start + text.length;
      let piece = '';
      let at = start;
      while (next < finds.length && finds[next]!.start < end) {
        const find = finds[next]!;
        const [from, to] = [Math.max(find.start, start), Math.min(find.end, end)];
        if (from < to) {
          piece += joined.slice(at, from) + referenceTo(joined.slice(from, to), find.rule);
          at = to;
        }
        if (find.end > end) break; // it goes on in the next text
        next++;
      }
      out.push(piece + joined.slice(at, end));
      start = end + SEPARATOR.length;
    }
    return out;
  };
  return {
    withhold: (text) => withholdAll([text])[0]!,
    withholdAll,
    get secrets() {
      return [...byValue.values()];
    },
    get count() {
      return count;
    },
  };
}

/**
 * Every string in a JSON value (a delivery's facts) with its credentials withheld and not kept:
 * the todo made from it keeps the fetchable copy.
 */
export function withholdInJson(value: unknown): unknown {
  const texts: string[] = [];
  const collect = (node: unknown): void => {
    if (typeof node === 'string') texts.push(node);
    else if (Array.isArray(node)) node.forEach(collect);
    else if (node !== null && typeof node === 'object') Object.values(node).forEach(collect);
  };
  collect(value);
  const withheld = createWithholder({ keep: false }).withholdAll(texts);
  if (withheld.every((text, i) => text === texts[i])) return value;
  let i = 0;
  const rebuild = (node: unknown): unknown => {
    if (typeof node === 'string') return withheld[i++];
    if (Array.isArray(node)) return node.map(rebuild);
    if (node !== null && typeof node === 'object') {
      return Object.fromEntries(Object.entries(node).map(([key, inner]) => [key, rebuild(inner)]));
    }
    return node;
  };
  return rebuild(value);
}

function newSecretId(): string {
  return Array.from(randomBytes(12), (byte) => ALPHABET[byte % 32]).join('');
}

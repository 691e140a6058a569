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
  /** The credentials withheld so far, each value once. Empty when they are not kept. */
  readonly secrets: WithheldSecret[];
  /** How many credentials were withheld, kept or not. */
  readonly count: number;
}

/**
 * Withholds the credentials of one todo's texts: the same value met twice (in the title and the
 * body) has one id. With `keep` false nothing is kept and every credential reads `[secret:withheld]`.
 */
export function createWithholder({ keep }: { keep: boolean }): Withholder {
  const byValue = new Map<string, WithheldSecret>();
  let count = 0;
  return {
    withhold(text) {
      const finds = findSecrets(text);
      if (finds.length === 0) return text;
      let out = '';
      let at = 0;
      for (const { start, end, rule } of finds) {
        const value = text.slice(start, end);
        count++;
        let reference = WITHHELD;
        if (keep) {
          let secret = byValue.get(value);
          if (!secret) byValue.set(value, (secret = { id: newSecretId(), rule, value }));
          reference = secretReference(secret.id);
        }
        out += text.slice(at, start) + reference;
        at = end;
      }
      return out + text.slice(at);
    },
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
  const withholder = createWithholder({ keep: false });
  const walk = (node: unknown): unknown => {
    if (typeof node === 'string') return withholder.withhold(node);
    if (Array.isArray(node)) return node.map(walk);
    if (node !== null && typeof node === 'object') {
      return Object.fromEntries(Object.entries(node).map(([key, inner]) => [key, walk(inner)]));
    }
    return node;
  };
  return walk(value);
}

function newSecretId(): string {
  return Array.from(randomBytes(12), (byte) => ALPHABET[byte % 32]).join('');
}

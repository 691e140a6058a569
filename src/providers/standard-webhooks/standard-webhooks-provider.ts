import { allowlistTrust } from '../allowlist-trust.js';
import { factLine, factText, factValue } from '../fact-text.js';
import { header, type Facts, type Provider } from '../provider.js';
import type { SourceFacts } from '../source-facts.js';
import { sourceProvider } from '../source-provider.js';
import { standardWebhooksRules, type StandardWebhooksRules } from './standard-webhooks-rules.js';
import { verifyStandardWebhook } from './verify-standard-webhook.js';

/**
 * Any Standard Webhooks sender. Its payloads have no common shape beyond the spec's advice
 * (`type`, `timestamp`, `data`), so the source's rules say where the title, body, link and actor
 * are (JSON pointers); without a title pointer the title is the event type, and without an actor
 * pointer the delivery is attributed to the source's owner, the human who added it. A sender has
 * no API to answer on: nothing is written back.
 */
export const standardWebhooksProvider: Provider<StandardWebhooksRules> = sourceProvider({
  kind: 'standard-webhooks',
  name: 'a Standard Webhooks sender',
  // webhook-id, webhook-timestamp and webhook-signature are all signed: verify needs each (401).
  requiredHeaders: [],
  verify: verifyStandardWebhook,
  deliveryId: (headers) => header(headers, 'webhook-id') ?? null,
  readFacts(_headers, payload): SourceFacts {
    // The spec's advice, not its rule: a payload without a usable `type` is just an event.
    const type =
      typeof payload.type === 'string' && factLine(payload.type) !== ''
        ? factLine(payload.type).slice(0, 100)
        : 'event';
    return {
      event: type,
      action: null,
      subject: null,
      actor: null,
      // The pointers are the rules', which may change: every string the payload has at its top
      // two levels could be one, so the facts keep those few, bounded (explain runs on them).
      strings: pickStrings(payload),
    };
  },
  rules: standardWebhooksRules,
  route(facts, rules) {
    const rule = rules.rules.event;
    if (!rule.enabled) return { outcome: 'no_rule' };
    if (rule.types.length > 0 && !rule.types.includes(facts.event)) return { outcome: 'no_rule' };
    const strings = (facts as Facts & { strings: Record<string, string> }).strings;
    const at = (pointer: string | null) => (pointer === null ? undefined : strings[pointer]);
    const title = at(rule.title);
    const actor = at(rule.actor);
    if (rule.actor !== null && !actor) {
      return {
        outcome: 'unreadable',
        note: `no actor at ${rule.actor} (the rule's actor pointer)`,
      };
    }
    return {
      outcome: 'matched',
      draft: {
        rule: 'event',
        queue: rule.queue,
        assignee: rule.assignee,
        kind: `standard_webhooks.${
          facts.event
            .toLowerCase()
            .replace(/[^a-z0-9_]+/g, '_')
            .replace(/^_+|_+$/g, '') || 'event'
        }`.slice(0, 100),
        title: factLine(title ? `${facts.event}: ${title}` : facts.event),
        body: at(rule.body) ?? null,
        // A link is one line, and no longer than a todo's url may be.
        url: at(rule.url) ? factValue(at(rule.url)!.trim()) || null : null,
        target: null,
        // Nobody is named unless the rules say where: then the owner, who added the source.
        actor: actor ? { login: actor.slice(0, 200), bot: false } : null,
      },
    };
  },
  // Who the rules' actor pointer names (then on trust.logins), else the owner: their own events.
  trust: (_facts, draft, rules, owner) =>
    allowlistTrust(draft.actor ?? null, null, rules.trust, owner),
});

const MAX_STRINGS = 100;
const STRING_MAX = 4096;

/** Every string (and number) down to depth 3, by its JSON pointer, neutralised and bounded. */
function pickStrings(payload: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  let count = 0;
  const walk = (value: unknown, pointer: string, depth: number) => {
    if (count >= MAX_STRINGS) return;
    if (typeof value === 'string' || typeof value === 'number') {
      const text = String(value);
      out[pointer] = factText(text.slice(0, 2 * STRING_MAX)).slice(0, STRING_MAX);
      count++;
      return;
    }
    if (depth >= 3 || typeof value !== 'object' || value === null) return;
    const entries = Array.isArray(value)
      ? value.slice(0, 20).map((item, index) => [String(index), item] as const)
      : Object.entries(value).slice(0, 50);
    for (const [key, inner] of entries) {
      walk(inner, `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`, depth + 1);
    }
  };
  walk(payload, '', 0);
  return out;
}

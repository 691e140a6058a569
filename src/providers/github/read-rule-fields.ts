import { factFirstLine, factLine, factText, factValue } from '../fact-text.js';
import { RULE_FIELDS, type FieldSpec as Spec } from './route-event.js';

/** A check suite lists its pull requests; the rules read the first, and trust reads them all. */
const LIST_MAX = 100;

/**
 * The part of a GitHub payload the rules (route-event.ts) and verdict commands read, bounded and
 * neutralised: what a delivery records as its facts (never the payload itself), and what the
 * rules run on — now, and when a delivery is explained again later. Fields keep their place and type, so a payload missing a field a rule
 * needs is still unreadable for that rule.
 */
export function readRuleFields(payload: Record<string, unknown>): Record<string, unknown> {
  const fields = project(payload, RULE_FIELDS) as Record<string, unknown>;
  // A comment's title shows its first line neutralised as a line, from the raw text.
  const comment = payload.comment as { body?: unknown } | undefined;
  if (typeof comment?.body === 'string' && typeof fields.comment === 'object' && fields.comment) {
    (fields.comment as Record<string, unknown>).first_line = factFirstLine(comment.body);
  }
  return fields;
}

function project(value: unknown, spec: Spec): unknown {
  if (spec === 'present') return value === undefined || value === null ? value : true;
  if (spec === 'line') return typeof value === 'string' ? factLine(value) : value;
  if (spec === 'text') return typeof value === 'string' ? factText(value) : value;
  if (spec === 'value') {
    if (typeof value === 'string') return factValue(value);
    return typeof value === 'object' && value !== null ? null : value;
  }
  if (Array.isArray(spec)) {
    return Array.isArray(value)
      ? value.slice(0, LIST_MAX).map((item) => project(item, spec[0]))
      : value === undefined
        ? undefined
        : null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    // null stays null (GitHub sends `requested_reviewer: null`); anything else is not what a
    // rule could read, and stays unreadable.
    return value === undefined ? undefined : value === null ? null : false;
  }
  const record = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(spec)) {
    if (!Object.hasOwn(record, key)) continue;
    const projected = project(record[key], inner);
    if (projected !== undefined) out[key] = projected;
  }
  return out;
}

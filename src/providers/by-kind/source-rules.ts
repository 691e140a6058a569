import type { SourceKind } from '../../contract/source-kinds.js';
import { providerFor } from './provider-for.js';
import { defaultRules, validateRules } from '../rule-schema.js';

/** A source's saved rules, read with its provider's schema (a rules file it no longer takes throws). */
export function sourceRules(source: { kind: SourceKind; queues: string[]; rules: unknown }) {
  return validateRules(providerFor(source.kind).rules, source.queues, source.rules);
}

/** A new source's rules: its provider's defaults, each rule on the queue that suits it. */
export function defaultSourceRules(kind: SourceKind) {
  return (queues: string[]) => defaultRules(providerFor(kind).rules, queues);
}

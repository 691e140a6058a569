import type { IncomingHttpHeaders } from 'node:http';
import type { SourceKind } from './source-kinds.js';
import type { SourceRules } from './source-rules.js';

/** Whether the raw body is what the sender signed, and if not, why (said in the 401). */
export type Verification =
  | { ok: true }
  /** `malformed`: signed, but not what the provider sends (400, not 401). */
  | { ok: false; reason: string; malformed?: true };

/** The human (or bot) who caused an event, by the provider's own login. */
export interface SourceActor {
  login: string;
  bot: boolean;
}

/**
 * What a delivery records and the rules read: bounded, neutralised fields, never the payload.
 * `subject` is the repository, project or team; `author` the author of the text an agent would
 * act on, where the payload names one (trust weighs it too).
 */
export interface SourceFacts {
  event: string;
  action: string | null;
  subject: string | null;
  actor: SourceActor | null;
  author?: string | null;
  [field: string]: unknown;
}

/** A todo the rules ask for, before trust decides whether it waits for a human. */
export interface SourceDraft {
  rule: string;
  queue: string;
  assignee: string | null;
  kind: string;
  title: string;
  body: string | null;
  url: string | null;
  /** Where replies and summaries go back to (kept in the todo's meta), or null. */
  target: Record<string, unknown> | null;
  /**
   * What the todo is about, when later deliveries about it must not make another while it is
   * open (Gitea says only that an issue's labels changed); else the delivery id keys the todo.
   */
  key?: string;
  /** Who caused it, where only the rules can say (Standard Webhooks' actor pointer). */
  actor?: SourceActor | null;
}

export type SourceRoute =
  | { outcome: 'matched'; draft: SourceDraft }
  | { outcome: 'no_rule' }
  | { outcome: 'unreadable'; note: string };

/**
 * One provider, in the order every delivery goes through it: verify the raw body in constant
 * time before anything is parsed; read its delivery id; read the facts (the human actor and
 * whether it is a bot among them); then the shared steps decide trust (an allowlist of logins)
 * and apply `route`, the rules that make todos.
 */
export interface SourceProvider {
  kind: SourceKind;
  /**
   * The headers the provider sends with every delivery besides the ones `verify` reads (a missing
   * one there is a 401): each entry one header, or the names of which one must be there. A
   * delivery that lacks one is refused with 400 naming it, before it is recorded, so that it
   * cannot be read as some other event and then hold the delivery's id (or its body) against
   * the corrected one.
   */
  requiredHeaders: readonly (readonly string[])[];
  /** Verifies the exact bytes under the headers it reads; a missing one is a 401 (or 400). */
  verify(raw: Buffer, headers: IncomingHttpHeaders, secrets: string[]): Verification;
  /** The provider's id of the delivery (a retry repeats it), or null when it sent none. */
  deliveryId(headers: IncomingHttpHeaders, payload: Record<string, unknown>): string | null;
  readFacts(headers: IncomingHttpHeaders, payload: Record<string, unknown>): SourceFacts;
  route(facts: SourceFacts, rules: SourceRules): SourceRoute;
}

/** A header's one value: a header sent twice is not one a provider sends. */
export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** The first of `required` (header names, or alternatives) that `headers` lacks, said as a name. */
export function missingHeader(
  headers: IncomingHttpHeaders,
  required: readonly (readonly string[])[],
): string | null {
  const absent = required.find((names) =>
    names.every((name) => header(headers, name.toLowerCase()) === undefined),
  );
  return absent ? absent.join(' or ') : null;
}

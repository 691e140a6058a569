import type { IncomingHttpHeaders } from 'node:http';
import type postgres from 'postgres';
import type { Probot } from 'probot';
import type { ReconcileReport } from '../contract/deliveries.js';
import type { ProviderKind } from '../contract/todo.js';
import type { Todo } from '../data/index.js';
import type { TodoTransaction } from '../todos/create-todo-service.js';
import type { Logger } from '../platform/logger.js';
import type { Outbound } from '../platform/egress/create-egress.js';
import type { RuleSet } from './rule-schema.js';

export type { ProviderKind } from '../contract/todo.js';

/** Whether the raw body is what the sender signed, and if not, why (said in the 401). */
export type Verification =
  | { ok: true }
  /** `malformed`: signed, but not what the provider sends (400, not 401). */
  | { ok: false; reason: string; malformed?: true };

/** The human (or bot) who caused an event, by the provider's own login. */
export interface EventActor {
  login: string;
  bot: boolean;
}

/**
 * What a delivery records and the rules read: bounded, neutralised fields, never the payload.
 * Each provider keeps its own fields beside the event and action; the rules run on exactly
 * these, now and when the delivery is explained again later.
 */
export interface Facts {
  event: string;
  action: string | null;
  [field: string]: unknown;
}

/** What the delivery's row shows beside its facts (read from them). */
export interface RecordColumns {
  /** The repository, project or team it is about. */
  subject: string | null;
  /** The provider's login of who caused it. */
  actor: string | null;
  /** The GitHub App's installation. */
  installationId: number | null;
}

/**
 * What the text and the work come from, as trust weighs it: the author's association with the
 * repository (GitHub's issues, comments, reviews), or whose code ran (a branch of the
 * repository itself, or a fork).
 */
export type Origin = { association: string } | { sameRepository: boolean };

/** A todo the rules ask for, before trust decides whether it waits for a human. */
export interface Draft {
  rule: string;
  queue: string;
  assignee: string | null;
  kind: string;
  /** Raw provider text: the ledger neutralises and caps titles and bodies (never do it twice). */
  title: string;
  body: string | null;
  url: string | null;
  /** Where replies, summaries and reactions go: the provider's own object; null: nowhere. */
  target: Record<string, unknown> | null;
  /**
   * What the todo is about, when later deliveries about it must not make another while it is
   * open (Gitea says only that an issue's labels changed); else the delivery id keys the todo.
   */
  key?: string;
  /** Who caused it, where only the rules can say (Standard Webhooks' actor pointer). */
  actor?: EventActor | null;
  /** Where trust looks for it (GitHub). */
  origin?: Origin;
  /** What gets a reaction once the todo exists (GitHub's 👀): the issue, or the comment. */
  react?: 'issue' | 'comment' | null;
}

export type Route =
  | { outcome: 'matched'; draft: Draft }
  | { outcome: 'no_rule' }
  | { outcome: 'unreadable'; note: string };

/** Trust's verdict on a matched delivery, and whom its todo is attributed to. */
export type Trust =
  | { outcome: 'trusted'; attributedTo: string }
  | { outcome: 'untrusted'; attributedTo: string; reason: string }
  /** A bot that is not allowlisted: nothing is made. */
  | { outcome: 'bot'; reason: string }
  /** Nobody to attribute the todo to. */
  | { outcome: 'unattributed' };

/** A write-back queued with a new todo, in the provider's own terms. */
export interface WriteBack {
  write_back: 'comment' | 'reaction';
  target: Record<string, unknown>;
  body: string;
  /** How `deliveries explain` names it (`issue_reaction`, `comment_reaction`). */
  what: string;
}

/** `/approve 43 note` or `/deny 43`: a human's verdict given where the work came from. */
export interface VerdictCommand {
  verdict: 'allow' | 'deny';
  approvalId: number;
  note: string | null;
  /** The issue or pull request the comment is on. */
  issueNumber: number;
}

/** Where a todo's replies and summary go back to. */
export interface Destination {
  /** `github`, or the source's name. */
  source: string;
  target: Record<string, unknown>;
  /** The rule that made the todo (a summary goes back only for `comment`). */
  rule: string;
}

/** A source's API as the registry opened it: its base URL and its token. */
export interface SourceApi {
  url: string;
  token: string;
}

/** One queued write-back, being sent. */
export interface WriteBackRequest {
  write_back: 'comment' | 'reaction';
  target: Record<string, unknown>;
  body: string;
  signal: AbortSignal;
}

/** What providers reach the outside through, made once by the server. */
export interface ProviderClients {
  /** Requests to URLs a user gave (a source's API): src/platform/egress. */
  outbound: Outbound;
  /** The GitHub App's client (installation tokens, Octokit); null without App credentials. */
  github: Probot | null;
}

/** How reconcile reads a delivery log and asks for what is missing, within what budget. */
export interface ReconcileTuning {
  /** Between two background passes (0: by hand only). */
  intervalMs: number;
  /** How far back a pass looks by default (GitHub keeps three days of deliveries). */
  windowMs: number;
  /** Redeliveries asked for in one pass; the rest wait for the next one. */
  maxRequests: number;
  /** Between two redelivery requests (providers ask integrations to pace what they create). */
  spacingMs: number;
  /** Deliveries per page of the log, and pages per pass. */
  perPage: number;
  maxPages: number;
  /** One request to the provider is abandoned after this. */
  requestTimeoutMs: number;
}

/** Reconcile with a provider's delivery log: what it failed to deliver is asked for again. */
export interface DeliveryReconciler {
  /** A pass now, then one every interval (none with 0). */
  start(): void;
  /** A pass by hand over the last `sinceMs`, once another process's pass has ended. */
  run(sinceMs: number): Promise<ReconcileReport>;
  /** Stops: a pass in flight is cut short. */
  stop(): Promise<void>;
}

/**
 * One provider, in the order every delivery goes through it (src/intake): the body verified in
 * constant time before anything is parsed; the headers it always sends; its delivery id; its
 * facts; its rules, then trust; and the capabilities only some providers have.
 */
export interface Provider<Rules = unknown> {
  kind: ProviderKind;
  /** How a message names it: `GitHub`, `Gitea`, `a Standard Webhooks sender`. */
  name: string;
  /**
   * The headers it sends with every delivery besides the ones `verify` reads (a missing one
   * there is a 401): each entry one header, or the names of which one must be there. A delivery
   * that lacks one is refused with 400 naming it, before it is recorded, so that it cannot be
   * read as some other event and then hold its delivery id (or its body) against the corrected
   * one.
   */
  requiredHeaders: readonly (readonly string[])[];
  /** Why a header it always sends is not as it sends it (400), or null. */
  checkHeaders?(headers: IncomingHttpHeaders): string | null;
  /**
   * Only a failed authentication is refused: anything else it authenticated is answered 200
   * and recorded `unreadable` (GitLab disables a hook that keeps getting 4xx answers), and a
   * delivery without an id is keyed by its body's hash.
   */
  lenient?: boolean;
  /** Verifies the exact bytes under the headers it reads, in constant time. */
  verify(
    raw: Buffer,
    headers: IncomingHttpHeaders,
    secrets: string[],
  ): Verification | Promise<Verification>;
  /** What a refusal calls its delivery id (`X-GitHub-Delivery`); else `the delivery id`. */
  deliveryIdName?: string;
  /** The provider's id of the delivery (a retry repeats it), or null when it sent none. */
  deliveryId(headers: IncomingHttpHeaders, payload: Record<string, unknown>): string | null;
  readFacts(headers: IncomingHttpHeaders, payload: Record<string, unknown>): Facts;
  /** The row's subject, actor and installation, read from the facts (old ones included). */
  columns(facts: Facts): RecordColumns;
  /** The rules' schema and defaults (a source's are saved with it; GitHub's are a file). */
  rules: RuleSet<Rules>;
  route(facts: Facts, rules: Rules): Route;
  /** Who is behind it and whether they are trusted; `owner`: the human who added the source. */
  trust(facts: Facts, draft: Draft, rules: Rules, owner: string | null): Trust;
  /** What a todo it made keeps in `meta`: where it came from and where replies go. */
  todoMeta(made: {
    source: string;
    deliveryId: string;
    facts: Facts;
    draft: Draft;
    attributedTo: string;
  }): Record<string, unknown>;

  // The capabilities some providers have and others lack.

  /**
   * Rules in the repository itself (GitHub's `.github/switchboard.yml`), read through the
   * provider's client for each delivery a rule could want; its defaults otherwise.
   */
  repositoryRules?: {
    /** Whether any rules could match: the many events none wants cost no API call. */
    mayMatch(facts: Facts): boolean;
    /** The rules for this delivery's repository, or the defaults and why (never a failure). */
    read(
      clients: ProviderClients,
      facts: Facts,
      timeoutMs: number,
    ): Promise<{ rules: Rules; warning: string | null }>;
  };
  /**
   * Verdicts given in a comment (`/approve N`, `/deny N`), recorded through the todo service in
   * the delivery's transaction (`todos`).
   */
  verdicts?: {
    read(facts: Facts): VerdictCommand | null;
    decide(
      tx: postgres.TransactionSql,
      todos: TodoTransaction,
      facts: Facts,
      command: VerdictCommand,
    ): Promise<{ decided: boolean; note: string }>;
  };
  /** Reactions on what made a pending todo (GitHub's 👀), and a note when there can be none. */
  reactions?(facts: Facts, draft: Draft): { writeBacks: WriteBack[]; note: string | null };
  /** Replies and summaries back to where a todo came from, and sending what is queued. */
  writeBack?: {
    destinationOf(todo: Todo): Destination | null;
    /** The line under a comment that says who wrote it, as the provider shows small print. */
    footer(line: string): string;
    /** One write-back; throws FinalSendError for an answer retrying cannot change. */
    send(request: WriteBackRequest, clients: ProviderClients, api: SourceApi | null): Promise<void>;
  };
  /**
   * Reconcile with the provider's delivery log, through its client as it is at each pass; a
   * background pass is skipped while `off` says why it cannot run (the client may come later).
   */
  reconciler?(options: {
    sql: postgres.Sql;
    /** Straight to PostgreSQL (Database.direct), for reconcile's session advisory lock. */
    direct: postgres.Sql;
    log: Logger;
    clients: ProviderClients;
    off: () => string | null;
    tuning?: Partial<ReconcileTuning>;
  }): DeliveryReconciler;
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

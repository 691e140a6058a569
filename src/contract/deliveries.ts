/**
 * Deliveries as the API shows them — listed, in full, explained, reconciled — shared by the
 * server that answers and the CLI that prints them.
 */

/** What became of a delivery, as its record says. */
export type Disposition =
  | 'created'
  | 'quarantined'
  | 'no_rule'
  | 'bot_sender'
  | 'unreadable'
  | 'duplicate'
  | 'verdict'
  | 'verdict_refused';

/** A delivery as `GET /deliveries` lists it: what it was, and what it made or why not. */
export interface Delivery {
  id: number;
  /** `github`, or the source's name. */
  source: string;
  kind: string;
  delivery_id: string;
  event: string;
  action: string | null;
  subject: string | null;
  actor: string | null;
  installation_id: number | null;
  disposition: string;
  todo_id: number | null;
  note: string | null;
  received_at: string;
}

/** One delivery in full (`GET /deliveries/:id`): also the facts the rules read, never the payload. */
export interface DeliveryRecord extends Delivery {
  facts: Record<string, unknown> | null;
  body_sha256: string | null;
}

/** What today's rules make of a delivery's stored facts. */
export interface WouldDo {
  disposition: string;
  rule: string | null;
  queue: string | null;
  kind: string | null;
  title: string | null;
  assignee: string | null;
  attributed_to: string | null;
  /** GitHub: what would be written back when the todo is made (`issue_reaction` …). */
  write_backs: string[];
  /** An `/approve N` or `/deny N` comment: the approval it would decide. */
  verdict: { approval_id: number; verdict: 'allow' | 'deny' } | null;
  note: string | null;
}

/** `GET /deliveries/:id/explain`: today's rules on the stored facts, beside what happened. */
export interface DeliveryExplanation<Record = DeliveryRecord> {
  delivery: Record;
  was: { disposition: string; todo_id: number | null; note: string | null };
  /** Null when there is nothing to run the rules on (`rules.note` says why). */
  would: WouldDo | null;
  /**
   * Which rules ran: `repository` (the repository's `.github/switchboard.yml` over the defaults,
   * read from GitHub now), `defaults` (GitHub's defaults: no App credentials, no repository, the
   * file could not be read — `note` says which), or `source` (the source's rules as saved now).
   */
  rules: { from: 'repository' | 'defaults' | 'source'; note: string };
}

/**
 * What became of an event GitHub sent that switchboard has no record of:
 * - `requested`: asked now, GitHub took it (the redelivery arrives on its own, soon after);
 * - `refused`: asked now, GitHub refused (`error` says what it answered; asked again next pass);
 * - `waiting`: asked before, and the redelivery is not in GitHub's log yet;
 * - `given_up`: asked three times, and still not received;
 * - `deferred`: over this pass's budget, for the next pass.
 */
export type MissingOutcome = 'requested' | 'refused' | 'waiting' | 'given_up' | 'deferred';

/** An event in GitHub's delivery log that switchboard has no record of, and what was done. */
export interface MissingDelivery {
  /** GitHub's id of the event: the X-GitHub-Delivery a redelivery carries again. */
  guid: string;
  event: string;
  action: string | null;
  /** The latest attempt GitHub lists: when, and what it got (0: no answer). */
  delivered_at: string;
  status_code: number;
  status: string;
  /** How many times switchboard has asked for it, this pass included. */
  requests: number;
  outcome: MissingOutcome;
  error?: string;
}

/** `POST /deliveries/reconcile`: one pass over GitHub's delivery log. */
export interface ReconcileReport {
  /** The start of the window looked at (never before this database was created). */
  since: string;
  /** Attempts GitHub listed in the window, and the events they are attempts of. */
  listed: number;
  events: number;
  /** Events switchboard has a record of. */
  recorded: number;
  /** The others, oldest first. */
  missing: MissingDelivery[];
}

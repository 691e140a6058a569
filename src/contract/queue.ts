/**
 * A queue's admission control as it crosses every boundary (the API, MCP, the CLI, the console):
 * its limits, how much of them is used, and — when it is at a limit — until when claims are held
 * back. Shared by server and clients, so it imports nothing.
 */
export const CLAIMS_WINDOWS = ['hour', 'day'] as const;
export type ClaimsWindow = (typeof CLAIMS_WINDOWS)[number];

export const WINDOW_SECONDS: Record<ClaimsWindow, number> = { hour: 3600, day: 86_400 };

export type HeldBackReason = 'max_in_flight' | 'max_claims';

/** Why a queue's todos wait although they could be claimed, and when the next may be. */
export interface HeldBack {
  queue: string;
  /** The limit that decides `next_at` (when both are reached, the one that frees later). */
  reason: HeldBackReason;
  /**
   * When the next claim may be admitted. At `max_in_flight`: the earliest end of a running lease
   * (sooner when a holder finishes; later when it renews its lease). At `max_claims`: when the
   * oldest claim counted leaves the window — exact.
   */
  next_at: Date;
  /** One line for people: "at its limit of 3 in flight — next at 2026-…Z". */
  message: string;
}

/** A queue as `queue show` and `GET /api/v1/queues/:queue` show it. */
export interface Queue {
  name: string;
  max_in_flight: number | null;
  max_claims: number | null;
  claims_window: ClaimsWindow | null;
  /** Todos claimed whose lease is still running. */
  in_flight: number;
  /** Claims in the last hour or day (the window); null when the queue has no claims limit. */
  claims_in_window: number | null;
  /** Todos that could be claimed now but for the limits (at most 10,000 are counted). */
  waiting: number;
  /** Null while claims are admitted. */
  held_back: HeldBack | null;
  updated_by: string | null;
  updated_at: Date | null;
}

/** What `queue set` changes: a number sets a limit, null clears it, leaving it out keeps it. */
export interface QueueLimitsChange {
  max_in_flight?: number | null | undefined;
  max_claims?: number | null | undefined;
  /** Required with a `max_claims` number. */
  claims_window?: ClaimsWindow | undefined;
}

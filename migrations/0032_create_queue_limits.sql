-- Per-queue admission control: at most N todos of a queue held at once ("in flight"), at most M
-- claims of it in any hour or day. A queue without a row here has no limits: its claims pass a
-- `not exists` probe of this table's key and nothing else (src/ledger/claim-todo.ts).
--
-- A claim of a limited queue locks its row here first, then counts with a fresh snapshot, in
-- one transaction: every claim of that queue — by id or by queue, from any process — waits for
-- the one before it to commit, so the counts it reads are exact and no two claimers can both
-- take the last slot.
create table queue_limits (
  queue queue_name primary key,
  -- Todos of the queue claimed and with a lease still running (an ended lease frees its slot).
  max_in_flight integer
    constraint queue_limits_max_in_flight_is_sane check (max_in_flight between 1 and 10000),
  -- Claims in the last `claims_window_seconds` (a sliding window: an hour or a day).
  max_claims integer
    constraint queue_limits_max_claims_is_sane check (max_claims between 1 and 1000000),
  claims_window_seconds integer
    constraint queue_limits_window_is_an_hour_or_a_day check (claims_window_seconds in (3600, 86400)),
  updated_by text not null references principals (name),
  updated_at timestamptz not null default now(),
  -- A queue whose limits are all cleared loses its row, and so goes back to the plain claim.
  constraint queue_limits_limit_something check (max_in_flight is not null or max_claims is not null),
  constraint queue_limits_claims_have_a_window check ((max_claims is null) = (claims_window_seconds is null))
);

-- Every claim of a limited queue, for counting its window: written by the claim's own
-- statement, kept a day (the longest window). Keyed by the claim's history row, so that the
-- claims of the last day copied from the history when a queue gets its first limit, and copied
-- again once the claims under way at that moment have committed, are each counted once.
-- No foreign key: retention prunes history on its own schedule.
create table queue_claims (
  event_id bigint primary key,
  queue text not null,
  claimed_at timestamptz not null
);
create index queue_claims_window_idx on queue_claims (queue, claimed_at);

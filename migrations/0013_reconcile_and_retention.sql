-- An intake that heals itself, and a database that does not grow for ever.

-- Reconcile (src/providers/github/reconcile-deliveries.ts): GitHub never retries a failed
-- delivery, so switchboard reads the App's delivery log and asks GitHub to deliver again each
-- event it has no record of. What it asked is kept here, one row per event (GitHub's `guid`, the
-- X-GitHub-Delivery header), so that an event is asked for once — again only when GitHub's log
-- shows that the redelivery failed too, and at most three times in all — whichever process asks.
create table github_redeliveries (
  guid text primary key
    constraint github_redeliveries_guid_is_bounded check (guid <> '' and length(guid) <= 128),
  event text not null
    constraint github_redeliveries_event_is_bounded check (length(event) <= 100),
  action text
    constraint github_redeliveries_action_is_bounded check (length(action) <= 100),
  -- GitHub's id of the attempt last asked to be repeated, and what that attempt got (0: no
  -- answer at all). A failed attempt newer than it is the redelivery failing in its turn.
  attempt_id bigint not null,
  status_code integer not null,
  requests integer not null default 1
    constraint github_redeliveries_requests_are_few check (requests between 1 and 3),
  requested_at timestamptz not null default now(),
  -- GitHub took the last request (202); else `error` says what it answered.
  accepted boolean not null default false,
  error text
    constraint github_redeliveries_error_is_bounded check (length(error) <= 500)
);
-- Retention walks it by age.
create index github_redeliveries_requested_at_idx on github_redeliveries (requested_at);

-- Retention (src/retention/prune-old-rows.ts) walks each table by age, oldest first, in small
-- batches. Deliveries and source_outbox have their age index already (0008); GitHub's outbox
-- gets one of its finished rows only: pending rows are the sender's, never pruned.
create index github_outbox_finished_idx on github_outbox (created_at) where state <> 'pending';

-- Finished todos (done, canceled, failed for good) by when they finished, for pruning their
-- history. Partial on purpose: a claim, a heartbeat or a release writes no entry here; only the
-- update that finishes a todo does, once.
create index todos_finished_idx on todos (updated_at, id)
  where state in ('done', 'canceled') or (state = 'failed' and available_at is null);

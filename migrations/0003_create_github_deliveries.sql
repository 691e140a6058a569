-- GitHub ingestion: every verified delivery and the write-backs it leads to. A delivery row, the
-- todo it made and its write-backs commit in one transaction before GitHub is answered 2xx.
create type github_delivery_disposition as enum (
  'created',      -- made a pending todo
  'quarantined',  -- made a todo that waits for a human (untrusted sender)
  'no_rule',      -- no routing rule matched
  'bot_sender',   -- a rule matched, but the sender is a bot that is not allowlisted
  'unreadable',   -- a rule's event, but without the fields the rule reads
  'duplicate',    -- a redelivery of a delivery already recorded: nothing new was made
  'verdict',      -- an `/approve N` or `/deny N` comment decided an approval
  'verdict_refused' -- such a comment, refused (wrong person, wrong place, already decided)
);

create table github_deliveries (
  id bigint generated always as identity primary key,
  -- X-GitHub-Delivery. A redelivery carries the id of the delivery it repeats.
  delivery_id text not null
    constraint github_deliveries_delivery_id_is_bounded
      check (delivery_id <> '' and length(delivery_id) <= 128),
  event text not null,
  action text,
  -- owner/name
  repository text,
  sender text,
  installation_id bigint,
  disposition github_delivery_disposition not null,
  todo_id bigint references todos (id),
  -- What the disposition alone does not say: a dropped assignee, a repository config that could
  -- not be read, the field a rule missed. Never payload text.
  note text
    constraint github_deliveries_note_is_bounded check (length(note) <= 1000),
  received_at timestamptz not null default now(),
  -- The row is written before the todo (it claims the delivery id), so the todo comes in a
  -- second statement: this rule holds at both points.
  constraint github_deliveries_only_makers_have_todos
    check (todo_id is null or disposition in ('created', 'quarantined'))
);

-- Recorded once: one row per delivery id that is not a redelivery receipt. Concurrent
-- redeliveries queue on this index until the first commits (or rolls back), then find it.
create unique index github_deliveries_recorded_once
  on github_deliveries (delivery_id) where disposition <> 'duplicate';

-- Write-backs to GitHub (a 👀 reaction, a summary comment) wait here until sent, so that GitHub
-- being down never blocks ingestion and never loses one.
create type github_write_back_kind as enum ('issue_reaction', 'comment_reaction', 'issue_comment');
create type github_write_back_state as enum ('pending', 'sent', 'dead');

create table github_outbox (
  id bigint generated always as identity primary key,
  todo_id bigint not null references todos (id),
  kind github_write_back_kind not null,
  installation_id bigint not null,
  owner text not null,
  repo text not null,
  issue_number bigint not null,
  comment_id bigint,
  -- The reaction's content, or the comment's text (GitHub takes at most 65536 characters).
  body text not null
    constraint github_outbox_body_is_bounded check (body <> '' and length(body) <= 65536),
  state github_write_back_state not null default 'pending',
  attempts integer not null default 0,
  -- When the next attempt may start. While an attempt runs it is the end of that attempt's
  -- lease, so a process that dies mid-send leaves the row to be taken up again.
  next_attempt_at timestamptz not null default now(),
  last_error text,
  created_at timestamptz not null default now(),
  sent_at timestamptz,
  constraint github_outbox_comment_reactions_name_the_comment
    check ((kind = 'comment_reaction') = (comment_id is not null)),
  constraint github_outbox_sent_rows_say_when
    check ((state = 'sent') = (sent_at is not null))
);

-- The sender's scan: the due rows, oldest first. Sent and dead rows leave the index.
create index github_outbox_due_idx on github_outbox (next_attempt_at, id) where state = 'pending';

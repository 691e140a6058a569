-- One intake for every provider (issue 21): GitHub's deliveries and every source's in one table,
-- GitHub's write-backs and the sources' replies in one outbox, each row keyed by its source
-- (`github` for the App, else the source's name) and its provider's kind. The two pairs of
-- tables had drifted apart (the console read one of them); the rows move, keeping their ids.

drop view deliveries;

alter type github_delivery_disposition rename to delivery_disposition;
alter type github_write_back_state rename to write_back_state;

-- `github` names the App's own deliveries and write-backs: no source may take it. Not checked on
-- rows already there (a source of that name, if any, keeps working; it can no longer be added).
alter table sources add constraint sources_name_is_not_github check (name <> 'github') not valid;

create table deliveries (
  -- GitHub's and the sources' deliveries already shared one sequence: every row keeps its id, so
  -- `deliveries show ID` shows the same delivery as before.
  id bigint generated always as identity primary key,
  -- By name, not by key: the record outlives the source (removing one keeps its history).
  source text not null,
  kind text not null
    constraint deliveries_kind_is_a_provider
      check (kind in ('github', 'gitea', 'forgejo', 'gitlab', 'linear', 'standard-webhooks')),
  -- The provider's own id of the delivery (X-GitHub-Delivery, X-Gitea-Delivery,
  -- Idempotency-Key, Linear-Delivery, webhook-id …): a retry carries the id it repeats.
  delivery_id text not null
    constraint deliveries_delivery_id_is_bounded
      check (delivery_id <> '' and length(delivery_id) <= 128),
  event text not null
    constraint deliveries_event_is_bounded check (length(event) <= 100),
  action text
    constraint deliveries_action_is_bounded check (length(action) <= 100),
  -- The repository, project or team it is about, and the provider's login of who caused it.
  subject text
    constraint deliveries_subject_is_bounded check (length(subject) <= 300),
  actor text
    constraint deliveries_actor_is_bounded check (length(actor) <= 200),
  -- The GitHub App's installation, which reconcile and explain read.
  installation_id bigint,
  disposition delivery_disposition not null,
  todo_id bigint references todos (id),
  -- What the disposition alone does not say. Never payload text.
  note text
    constraint deliveries_note_is_bounded check (length(note) <= 1000),
  -- What the rules read, bounded and neutralised (`deliveries explain` runs today's rules on
  -- it), and the SHA-256 of the signed body (what a replay under another id repeats). Null only
  -- on GitHub's deliveries from before migration 0008.
  facts jsonb
    constraint deliveries_facts_are_an_object check (jsonb_typeof(facts) = 'object'),
  body_sha256 bytea
    constraint deliveries_body_sha256_is_a_sha256 check (length(body_sha256) = 32),
  received_at timestamptz not null default now(),
  -- The row is written before the todo (it claims the delivery id), so the todo comes in a
  -- second statement: this rule holds at both points.
  constraint deliveries_only_makers_have_todos
    check (todo_id is null or disposition in ('created', 'quarantined')),
  constraint deliveries_only_github_has_installations
    check (installation_id is null or kind = 'github')
);

insert into deliveries (id, source, kind, delivery_id, event, action, subject, actor,
                        installation_id, disposition, todo_id, note, facts, body_sha256, received_at)
overriding system value
select id, 'github', 'github', delivery_id, event, action, repository, sender, installation_id,
       disposition, todo_id, note, facts, body_sha256, received_at
from github_deliveries
union all
select id, source, kind::text, delivery_id, event, action, subject, actor, null, disposition,
       todo_id, note, facts, body_sha256, received_at
from source_deliveries
order by id;

-- Past every id the old sequence handed out, pruned or rolled back ones included: no id is reused.
select setval(pg_get_serial_sequence('deliveries', 'id'), last_value, is_called)
from github_deliveries_id_seq;

-- Recorded once: one row per source and delivery id that is neither a redelivery receipt nor a
-- delivery that was not understood (migration 0021). Concurrent redeliveries queue on this index
-- until the first commits (or rolls back), then find it.
create unique index deliveries_recorded_once
  on deliveries (source, delivery_id) where disposition not in ('duplicate', 'unreadable');
-- The replay defence looks back 24 hours along this (src/intake/find-replay.ts).
create index deliveries_body_idx on deliveries (source, body_sha256, received_at)
  where disposition not in ('duplicate', 'unreadable') and body_sha256 is not null;
-- Pruning walks it by age; the list pages one source by id; the console finds a todo's delivery.
create index deliveries_received_at_idx on deliveries (received_at);
create index deliveries_source_idx on deliveries (source, id);
create index deliveries_todo_idx on deliveries (todo_id) where todo_id is not null;

drop table source_deliveries;
drop table github_deliveries;

-- Write-backs: a reply or summary as a comment (every provider with an API), a reaction
-- (GitHub's 👀). Queued in the transaction that asked for them, so they exist exactly when it
-- committed; sent by one drainer, retried until the provider takes them.
create type write_back_kind as enum ('comment', 'reaction');

create table outbox (
  id bigint generated always as identity primary key,
  todo_id bigint not null references todos (id),
  source text not null,
  kind text not null
    constraint outbox_kind_is_a_provider
      check (kind in ('github', 'gitea', 'forgejo', 'gitlab', 'linear', 'standard-webhooks')),
  write_back write_back_kind not null,
  -- Where it goes, in the provider's own terms: GitHub's installation, owner, repo and issue
  -- number (and comment id, for a reaction to a comment); a Gitea issue, a GitLab merge request,
  -- a Linear issue. A source's API URL and token are read from the source when it is sent.
  target jsonb not null
    constraint outbox_target_is_an_object check (jsonb_typeof(target) = 'object'),
  -- The comment's text (at most 65536 characters: GitHub's cap), or the reaction (`eyes`).
  body text not null
    constraint outbox_body_is_bounded check (body <> '' and length(body) <= 65536),
  state write_back_state not null default 'pending',
  attempts integer not null default 0,
  -- When the next attempt may start. While an attempt runs it is the end of that attempt's
  -- lease, so a process that dies mid-send leaves the row to be taken up again.
  next_attempt_at timestamptz not null default now(),
  last_error text
    constraint outbox_last_error_is_bounded check (length(last_error) <= 500),
  created_at timestamptz not null default now(),
  sent_at timestamptz,
  constraint outbox_sent_rows_say_when check ((state = 'sent') = (sent_at is not null)),
  constraint outbox_github_targets_name_the_issue
    check (kind <> 'github' or target ?& array['installation_id', 'owner', 'repo', 'issue_number'])
);

-- GitHub's write-backs keep their ids; the sources' (never shown outside the log) follow them.
insert into outbox (id, todo_id, source, kind, write_back, target, body, state, attempts,
                    next_attempt_at, last_error, created_at, sent_at)
overriding system value
select id, todo_id, 'github', 'github',
       case kind when 'issue_comment' then 'comment' else 'reaction' end::write_back_kind,
       jsonb_strip_nulls(jsonb_build_object(
         'installation_id', installation_id, 'owner', owner, 'repo', repo,
         'issue_number', issue_number, 'comment_id', comment_id)),
       body, state, attempts, next_attempt_at, last_error, created_at, sent_at
from github_outbox
order by id;

select setval(pg_get_serial_sequence('outbox', 'id'), last_value, is_called)
from github_outbox_id_seq;

-- A source's todo has the source's kind as its `source`.
insert into outbox (todo_id, source, kind, write_back, target, body, state, attempts,
                    next_attempt_at, last_error, created_at, sent_at)
select o.todo_id, o.source, t.source, 'comment', o.target, o.body, o.state, o.attempts,
       o.next_attempt_at, o.last_error, o.created_at, o.sent_at
from source_outbox o join todos t on t.id = o.todo_id
order by o.id;

-- The sender's scan: the due rows, oldest first. Retention walks the finished ones by age.
create index outbox_due_idx on outbox (next_attempt_at, id) where state = 'pending';
create index outbox_finished_idx on outbox (created_at) where state <> 'pending';

drop table source_outbox;
drop table github_outbox;
drop type github_write_back_kind;

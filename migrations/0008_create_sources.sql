-- Sources: providers beyond GitHub (Gitea, Forgejo, GitLab, Linear, any Standard Webhooks sender),
-- each registered by an admin under a name, with a secret kept encrypted. Their deliveries are
-- recorded like GitHub's, with the facts the rules read, so that a delivery can be explained
-- again later; and every provider's record catches a replay of a body under a new delivery id.

alter domain todo_source drop constraint todo_source_is_known;
alter domain todo_source add constraint todo_source_is_known
  check (value in ('github', 'cli', 'mcp', 'channel', 'api',
                   'gitea', 'forgejo', 'gitlab', 'linear', 'standard-webhooks'));

-- GitHub's record learns the same two things every source records: what the rules read (never
-- the payload itself: bounded, neutralised fields), and the SHA-256 of the signed body, which is
-- what a replay under a new X-GitHub-Delivery repeats (the signature does not cover that header).
alter table github_deliveries add column facts jsonb;
alter table github_deliveries add column body_sha256 bytea
  constraint github_deliveries_body_sha256_is_a_sha256 check (length(body_sha256) = 32);
-- Pruning walks this in small batches; the replay check looks back 24 hours along the second.
create index github_deliveries_received_at_idx on github_deliveries (received_at);
create index github_deliveries_body_idx on github_deliveries (body_sha256, received_at)
  where disposition <> 'duplicate' and body_sha256 is not null;

create type source_kind as enum ('gitea', 'forgejo', 'gitlab', 'linear', 'standard-webhooks');

create table sources (
  id bigint generated always as identity primary key,
  name text not null
    constraint sources_name_is_a_slug check (name ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
  kind source_kind not null,
  -- The admin who added it: the human a Standard Webhooks delivery is attributed to when no
  -- field of the payload names one.
  owner text not null references principals (name),
  -- The queues its rules may fill; the first is where every default rule puts its todos.
  queues text[] not null
    constraint sources_have_a_queue check (cardinality(queues) > 0),
  -- Secrets are sealed with the server key (AES-256-GCM: nonce, tag, ciphertext), never stored
  -- in the clear: a copy of the database alone cannot forge a delivery.
  secret bytea not null,
  -- After a rotation the old secret keeps working until then, so that the provider can be
  -- given the new one without a delivery being refused in between.
  previous_secret bytea,
  previous_secret_expires_at timestamptz,
  -- For replies and summaries back to the provider: its API's base URL and a token, sealed.
  api_url text
    constraint sources_api_url_is_bounded check (length(api_url) <= 2048),
  api_token bytea,
  -- The source's rules (the shape of .github/switchboard.yml), validated before they are saved.
  rules jsonb not null default '{}'
    constraint sources_rules_are_an_object check (jsonb_typeof(rules) = 'object'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint sources_name_key unique (name),
  constraint sources_previous_secret_expires
    check ((previous_secret is null) = (previous_secret_expires_at is null)),
  constraint sources_api_token_has_a_url check (api_token is null or api_url is not null)
);

create table source_deliveries (
  -- One id space with GitHub's deliveries, so that the list of every delivery pages by one id.
  id bigint primary key default nextval('github_deliveries_id_seq'),
  -- By name, not by key: the record outlives the source (removing a source keeps its history).
  source text not null,
  kind source_kind not null,
  -- The provider's own id of the delivery (X-Gitea-Delivery, Idempotency-Key, Linear-Delivery,
  -- webhook-id …): a retry carries the id of the delivery it repeats.
  delivery_id text not null
    constraint source_deliveries_delivery_id_is_bounded
      check (delivery_id <> '' and length(delivery_id) <= 128),
  event text not null
    constraint source_deliveries_event_is_bounded check (length(event) <= 100),
  action text
    constraint source_deliveries_action_is_bounded check (length(action) <= 100),
  -- The repository, project or team it is about, and the provider's login of who caused it.
  subject text
    constraint source_deliveries_subject_is_bounded check (length(subject) <= 300),
  actor text
    constraint source_deliveries_actor_is_bounded check (length(actor) <= 200),
  disposition github_delivery_disposition not null,
  todo_id bigint references todos (id),
  note text
    constraint source_deliveries_note_is_bounded check (length(note) <= 1000),
  -- What the rules read, bounded and neutralised: `deliveries explain` runs today's rules on it.
  facts jsonb not null
    constraint source_deliveries_facts_are_an_object check (jsonb_typeof(facts) = 'object'),
  body_sha256 bytea not null
    constraint source_deliveries_body_sha256_is_a_sha256 check (length(body_sha256) = 32),
  received_at timestamptz not null default now(),
  constraint source_deliveries_only_makers_have_todos
    check (todo_id is null or disposition in ('created', 'quarantined'))
);

-- As for GitHub: one row per delivery id and source that is not a redelivery receipt.
create unique index source_deliveries_recorded_once
  on source_deliveries (source, delivery_id) where disposition <> 'duplicate';
create index source_deliveries_received_at_idx on source_deliveries (received_at);
create index source_deliveries_source_idx on source_deliveries (source, id);
create index source_deliveries_body_idx on source_deliveries (source, body_sha256, received_at)
  where disposition <> 'duplicate';

-- Every delivery, whichever provider sent it: what `GET /api/v1/deliveries` lists.
create view deliveries as
  select id, 'github' as source, 'github' as kind, delivery_id, event, action,
         repository as subject, sender as actor, installation_id, disposition, todo_id, note,
         facts, received_at
  from github_deliveries
  union all
  select id, source, kind::text, delivery_id, event, action, subject, actor, null::bigint,
         disposition, todo_id, note, facts, received_at
  from source_deliveries;

-- Replies and summaries going back to a source's issue or merge request, sent like GitHub's
-- write-backs: queued in the transaction that asked for them, retried until the provider takes
-- them. The target names the provider's own object (an issue number, a merge request iid, a
-- Linear issue id); the API URL and token are read from the source when it is sent.
create table source_outbox (
  id bigint generated always as identity primary key,
  todo_id bigint not null references todos (id),
  source text not null,
  target jsonb not null
    constraint source_outbox_target_is_an_object check (jsonb_typeof(target) = 'object'),
  body text not null
    constraint source_outbox_body_is_bounded check (body <> '' and length(body) <= 65536),
  state github_write_back_state not null default 'pending',
  attempts integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  last_error text,
  created_at timestamptz not null default now(),
  sent_at timestamptz,
  constraint source_outbox_sent_rows_say_when check ((state = 'sent') = (sent_at is not null))
);

create index source_outbox_due_idx on source_outbox (next_attempt_at, id) where state = 'pending';
create index source_outbox_created_at_idx on source_outbox (created_at);

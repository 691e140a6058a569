-- The todo: durable, human-attributed work. Every state change is one guarded statement in
-- src/ledger/; the constraints below are the rules no code path may break.
create type todo_state as enum ('pending', 'claimed', 'done', 'failed', 'canceled', 'quarantined');
create type approval_verdict as enum ('allow', 'deny');

create table todos (
  id bigint generated always as identity primary key,
  queue text not null
    constraint todos_queue_is_a_slug check (queue ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
  kind text not null
    constraint todos_kind_is_dotted_words check (kind ~ '^[a-z][a-z0-9_]*(\.[a-z0-9_]+){0,7}$' and length(kind) <= 100),
  title text not null
    -- Titles are neutralised at ingest: one line, no control characters, bounded.
    constraint todos_title_is_one_clean_line
      check (title <> '' and length(title) <= 300 and title !~ '[\x01-\x1f\x7f-\x9f]'),
  body text
    constraint todos_body_is_bounded check (length(body) <= 65536),
  state todo_state not null default 'pending',
  source text not null
    constraint todos_source_is_known check (source in ('github', 'cli', 'mcp', 'channel', 'api')),
  url text
    constraint todos_url_is_bounded check (length(url) <= 2048),
  -- The human the work is attributed to: a GitHub login for provider events, else the owner
  -- of the principal that created it. Free text on purpose: provider users need no account.
  attributed_to text not null
    constraint todos_attributed_to_is_bounded check (attributed_to <> '' and length(attributed_to) <= 100),
  assignee text references principals (name),
  idempotency_key text
    constraint todos_idempotency_key_is_bounded check (length(idempotency_key) between 1 and 200),

  -- Lease state. `available_at` is when the todo may next be claimed: its creation or release
  -- for pending todos, the end of the lease for claimed ones, the retry time for failed ones
  -- that have attempts left. Null means "not without a human": done, canceled, quarantined,
  -- dead, and approvals. One column makes "claimable" a single index range:
  -- available_at <= now().
  available_at timestamptz,
  claimed_by text references principals (name),
  lease_token uuid,
  attempt integer not null default 0
    constraint todos_attempt_is_not_negative check (attempt >= 0),
  max_attempts integer not null default 5
    constraint todos_max_attempts_is_sane check (max_attempts between 1 and 100),
  summary text
    constraint todos_summary_is_bounded check (length(summary) <= 65536),
  result jsonb,

  -- Approvals: who asked (and Claude Code's request id when relayed), until when, and the verdict.
  requested_by text references principals (name),
  request_id text
    constraint todos_request_id_is_claude_codes check (request_id ~ '^[a-km-z]{5}$'),
  about_todo_id bigint references todos (id),
  expires_at timestamptz,
  verdict approval_verdict,
  decided_by text references principals (name),
  decided_at timestamptz,

  -- Provider details the adapters need later (repository, issue number, comment id, …).
  meta jsonb not null default '{}'
    constraint todos_meta_is_an_object check (jsonb_typeof(meta) = 'object'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),

  constraint todos_claimed_iff_leased
    check ((state = 'claimed') = (lease_token is not null)),
  constraint todos_claimed_has_holder_and_expiry
    check (state <> 'claimed' or (claimed_by is not null and available_at is not null)),
  constraint todos_only_live_todos_are_available
    check (available_at is null or state in ('pending', 'claimed', 'failed')),
  constraint todos_approvals_are_owned_and_expire
    check (kind <> 'approval' or (assignee is not null and requested_by is not null and expires_at is not null)),
  constraint todos_approvals_are_decided_not_claimed
    check (kind <> 'approval' or (state in ('pending', 'done', 'canceled') and available_at is null)),
  constraint todos_done_approvals_have_a_verdict
    check ((verdict is not null) = (kind = 'approval' and state = 'done')),
  constraint todos_verdicts_are_attributed
    check ((verdict is null) = (decided_by is null) and (verdict is null) = (decided_at is null))
);

-- Claim-next: the oldest available todo of a queue is the first entry of this range.
create index todos_claimable_idx on todos (queue, available_at, id) where available_at is not null;

-- An idempotency key names one live todo per queue (waiting, claimed, or failed with attempts
-- left); once it is finished, canceled or dead the key is free again.
create unique index todos_live_idempotency_key
  on todos (queue, idempotency_key)
  where idempotency_key is not null
    and (state in ('pending', 'claimed', 'quarantined') or (state = 'failed' and available_at is not null));

create index todos_assignee_idx on todos (assignee) where assignee is not null;
create index todos_claimed_by_idx on todos (claimed_by) where claimed_by is not null;
create index todos_requested_by_idx on todos (requested_by) where requested_by is not null;
create index todos_queue_state_idx on todos (queue, state, id);
create index todos_state_id_idx on todos (state, id);
create index todos_expiring_approvals_idx on todos (expires_at) where kind = 'approval' and state = 'pending';

-- Only a human records a verdict. The ledger checks this before it writes; the trigger makes it
-- true for every path, including ones written later.
create function todos_verdict_by_human() returns trigger
language plpgsql as $$
begin
  if not exists (select 1 from principals p where p.name = new.decided_by and p.kind = 'human') then
    raise exception 'only a human may decide approval #%', new.id
      using errcode = 'insufficient_privilege';
  end if;
  return new;
end
$$;

create trigger todos_verdict_by_human
  before insert or update of verdict on todos
  for each row when (new.verdict is not null)
  execute function todos_verdict_by_human();

-- Wakes at the source: whenever a todo becomes claimable (or an approval waits for a human) and
-- whenever a verdict lands, notify in the same transaction, so a wake exists only if the write
-- committed. The channel carries the schema so that databases shared by several schemas (tests
-- run one per file) do not hear each other.
create function todos_notify_wake() returns trigger
language plpgsql as $$
begin
  perform pg_notify(
    tg_table_schema || '.wakes',
    json_build_object(
      'todo_id', new.id,
      'queue', new.queue,
      'event', case
        when new.verdict is not null then 'verdict'
        when new.kind = 'approval' then 'approval'
        else 'claimable'
      end
    )::text
  );
  return null;
end
$$;

create trigger todos_notify_on_insert
  after insert on todos
  for each row when (new.state = 'pending')
  execute function todos_notify_wake();

create trigger todos_notify_on_update
  after update of state on todos
  for each row when (
    (new.state = 'pending' and old.state <> 'pending')
    or (new.verdict is not null and old.verdict is null)
  )
  execute function todos_notify_wake();

-- The append-only trail of every change: who (human, agent or system), what, when, from where.
create type actor_kind as enum ('human', 'agent', 'system');

create table todo_events (
  id bigint generated always as identity primary key,
  todo_id bigint not null references todos (id),
  at timestamptz not null default now(),
  actor_kind actor_kind not null,
  actor text not null,
  via text not null,
  action text not null,
  data jsonb
);

create index todo_events_todo_id_idx on todo_events (todo_id, id);

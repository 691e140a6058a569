-- The todo: durable, human-attributed work. Every state change is one guarded statement in
-- src/ledger/; the constraints below are the rules no code path may break.
create type todo_state as enum ('pending', 'claimed', 'done', 'failed', 'canceled', 'quarantined');
create type approval_verdict as enum ('allow', 'deny');

-- Rules on single values are domains rather than table CHECKs: a domain is checked when a value
-- is written to the column, while PostgreSQL re-checks every table CHECK on every UPDATE of the
-- row. Claims and completions touch only lease columns, so they pay only for the lease rules.
create domain queue_name as text
  constraint queue_name_is_a_slug check (value ~ '^[a-z0-9][a-z0-9._-]{0,63}$');
create domain todo_kind as text
  constraint todo_kind_is_dotted_words check (value ~ '^[a-z][a-z0-9_]*(\.[a-z0-9_]+){0,7}$' and length(value) <= 100);
-- Titles are neutralised at ingest: one line, no control characters, bounded.
create domain todo_title as text
  constraint todo_title_is_one_clean_line
    check (value <> '' and length(value) <= 300 and value !~ '[\x01-\x1f\x7f-\x9f]');
create domain todo_source as text
  constraint todo_source_is_known check (value in ('github', 'cli', 'mcp', 'channel', 'api'));
create domain long_text as text
  constraint long_text_is_bounded check (length(value) <= 65536);
create domain short_text as text
  constraint short_text_is_bounded check (value <> '' and length(value) <= 2048);
create domain attempt_count as integer
  constraint attempt_count_is_not_negative check (value >= 0);
create domain attempt_limit as integer
  constraint attempt_limit_is_sane check (value between 1 and 100);
create domain claude_request_id as text
  constraint claude_request_id_is_five_letters check (value ~ '^[a-km-z]{5}$');
create domain todo_meta as jsonb
  constraint meta_is_an_object check (jsonb_typeof(value) = 'object');

create table todos (
  id bigint generated always as identity primary key,
  queue queue_name not null,
  kind todo_kind not null,
  title todo_title not null,
  body long_text,
  state todo_state not null default 'pending',
  source todo_source not null,
  url short_text,
  -- The human the work is attributed to: a GitHub login for provider events, else the owner
  -- of the principal that created it. Free text on purpose: provider users need no account.
  attributed_to short_text not null,
  assignee text references principals (name),
  idempotency_key short_text,

  -- Lease state. `available_at` is when the todo may next be claimed: its creation or release
  -- for pending todos, the end of the lease for claimed ones, the retry time for failed ones
  -- that have attempts left. Null means "not without a human": done, canceled, quarantined,
  -- dead, and approvals. One column makes "claimable" a single index range:
  -- available_at <= now().
  available_at timestamptz,
  -- Deliberately no foreign key: its check would share-lock the holder's principals row on
  -- every claim, and all of one agent's concurrent claims would queue on that one hot row.
  -- The ledger only ever writes the name of an authenticated principal here.
  claimed_by text,
  lease_token uuid,
  attempt attempt_count not null default 0,
  max_attempts attempt_limit not null default 5,
  summary long_text,
  result jsonb,

  -- Approvals: who asked (and Claude Code's request id when relayed), until when, and the verdict.
  requested_by text references principals (name),
  request_id claude_request_id,
  about_todo_id bigint references todos (id),
  expires_at timestamptz,
  verdict approval_verdict,
  decided_by text references principals (name),
  decided_at timestamptz,

  -- Provider details the adapters need later (repository, issue number, comment id, …).
  meta todo_meta not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),

  -- The rules that tie columns to states: three CHECKs, because each is re-checked on every update.
  constraint todos_lease_matches_state check (
    -- a claimed todo, and only a claimed one, has a lease token, a holder and a lease end
    (state = 'claimed') = (lease_token is not null)
    and (state <> 'claimed' or (claimed_by is not null and available_at is not null))
    -- only todos that can still be worked are ever available
    and (available_at is null or state in ('pending', 'claimed', 'failed'))
  ),
  constraint todos_approvals_are_owned_and_never_claimed check (
    -- an approval belongs to a human, names who asked, expires, and is never claimed
    kind <> 'approval'
    or (assignee is not null and requested_by is not null and expires_at is not null
        and state in ('pending', 'done', 'canceled') and available_at is null)
  ),
  constraint todos_verdicts_end_approvals check (
    -- a done approval has a verdict, nothing else ever has one, and every verdict says who and when
    (verdict is not null) = (kind = 'approval' and state = 'done')
    and (verdict is null) = (decided_by is null)
    and (verdict is null) = (decided_at is null)
  )
);

-- Claim-next: the oldest available todo of a queue is the first entry of this range.
create index todos_claimable_idx on todos (queue, available_at, id) where available_at is not null;

-- An idempotency key names one live todo per queue (waiting, claimed, or failed with attempts
-- left); once it is finished, canceled or dead the key is free again.
create unique index todos_live_idempotency_key
  on todos (queue, idempotency_key)
  where idempotency_key is not null
    and (state in ('pending', 'claimed', 'quarantined') or (state = 'failed' and available_at is not null));

-- Few indexes on purpose: a claim or a completion moves indexed columns, so every index gets a
-- new entry on every such update. Lists walk the primary key newest first.
create index todos_assignee_idx on todos (assignee) where assignee is not null;
create index todos_requested_by_idx on todos (requested_by) where requested_by is not null;
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
      -- who may act on it, so listeners can route the wake without reading the todo
      'assignee', new.assignee,
      'requested_by', new.requested_by,
      -- the transaction that made the change: one wake, however many processes hear it
      'wake_id', pg_current_xact_id()::text,
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
  id bigint generated always as identity,
  todo_id bigint not null references todos (id),
  at timestamptz not null default now(),
  actor_kind actor_kind not null,
  actor text not null,
  via text not null,
  action text not null,
  data jsonb,
  -- A todo's history is the only way in: one index serves as key and as access path.
  constraint todo_events_pkey primary key (todo_id, id)
);

-- Delivery: who is attached to which server process to be woken, and how each waiting todo is
-- being rung. The todo stays the record; these rows only steer the doorbell.

-- A consumer attached to one server process: an event stream (`sse`, or `channel` when it is a
-- Claude Code channel) or an MCP session with its notification stream open (`mcp_log`). The
-- owning process refreshes `seen_at`; a session not seen for a while belongs to a dead process.
create table consumer_sessions (
  id uuid primary key,
  principal text not null references principals (name),
  process_id uuid not null,
  path text not null
    constraint consumer_sessions_path_is_known check (path in ('channel', 'mcp_log', 'sse')),
  -- Queues the consumer asked for; null for every queue its principal may work.
  queues text[],
  connected_at timestamptz not null default now(),
  seen_at timestamptz not null default now(),
  last_rung_at timestamptz
);

create index consumer_sessions_principal_idx on consumer_sessions (principal);
create index consumer_sessions_process_idx on consumer_sessions (process_id);

-- An outbound webhook a principal registered: the last rung of the ladder before "stored".
-- The signing secret (Standard Webhooks, whsec_…) must be used to sign, so it is kept as is;
-- it authenticates switchboard to the receiver, not anyone to switchboard.
create table consumer_webhooks (
  principal text primary key references principals (name),
  url text not null
    constraint consumer_webhooks_url_is_bounded check (length(url) <= 2048),
  secret text not null,
  created_at timestamptz not null default now(),
  last_rung_at timestamptz
);

-- How a claimable todo is being rung: once per wake at once, then again with backoff while it
-- stays unclaimed, to another consumer where there is one. Whoever updates the row rings.
create table todo_rings (
  todo_id bigint primary key references todos (id),
  rings integer not null default 0,
  next_ring_at timestamptz not null,
  last_session uuid,
  -- the wake (writing transaction) the latest ring answered; a new wake rings at once
  wake_id text
);

create index todo_rings_due_idx on todo_rings (next_ring_at);

-- Web Push for the web console: a human's browsers are told of a new approval even with every
-- console page closed (src/web/push-sender.ts, README "Web console").

-- The server's VAPID key pair (P-256, base64url, as the Web Push protocol writes them): made at
-- the first start and kept here, so that every process signs with the same key and a browser's
-- subscription (made for the public key) outlives restarts. Whoever reads this table can also
-- read the subscriptions below, so the private key is no more exposed here than what it signs for.
create table web_push_keys (
  -- one row: the key of this deployment
  id boolean primary key default true
    constraint web_push_keys_one_row check (id),
  public_key text not null
    constraint web_push_keys_public_key_is_p256 check (public_key ~ '^B[A-Za-z0-9_-]{86}$'),
  private_key text not null
    constraint web_push_keys_private_key_is_p256 check (private_key ~ '^[A-Za-z0-9_-]{43}$'),
  created_at timestamptz not null default now()
);

-- A browser's push subscription, bound to the console session that made it: signing out (or the
-- session's row going for any reason) deletes it. The endpoint is a capability (whoever knows it
-- and the keys can push to that browser): it is never logged, and histories name only its
-- push service's origin and this row's id.
create table web_push_subscriptions (
  id bigint generated always as identity primary key,
  principal_id bigint not null references principals (id),
  session_id bigint not null references web_sessions (id) on delete cascade,
  endpoint text not null
    constraint web_push_subscriptions_endpoint_is_https
      check (endpoint ~ '^https://[^/?#]+/' and length(endpoint) <= 2048),
  -- the browser's P-256 public key (65 bytes) and auth secret (16 bytes), base64url
  p256dh text not null
    constraint web_push_subscriptions_p256dh_is_p256 check (p256dh ~ '^B[A-Za-z0-9_-]{86}$'),
  auth text not null
    constraint web_push_subscriptions_auth_is_16_bytes check (auth ~ '^[A-Za-z0-9_-]{22}$'),
  created_at timestamptz not null default now(),
  -- one endpoint is one browser profile's subscription, whoever is signed in there now
  constraint web_push_subscriptions_endpoint_key unique (endpoint)
);

create index web_push_subscriptions_principal_id_idx on web_push_subscriptions (principal_id);
create index web_push_subscriptions_session_id_idx on web_push_subscriptions (session_id);

-- The approvals whose push went out and whose closing push has not: every process hears an
-- approval's wake, and the one whose insert lands sends it; the one whose delete lands sends the
-- closing push. Rows live only while their approval waits, so the table stays small.
create table web_push_notices (
  todo_id bigint primary key references todos (id) on delete cascade,
  opened_at timestamptz not null default now()
);

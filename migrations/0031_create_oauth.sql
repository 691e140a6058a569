-- Sign-in for agents and terminals (README "Signing in with OAuth"): switchboard is the OAuth 2.1
-- authorization server of its own /mcp and /api/v1. A client registers (or names the URL of its
-- metadata document), sends its human to the console's consent page, and gets tokens bound to a
-- grant: which client acts as which principal, on which resource. Revoking the grant ends them all.

-- The clients that may ask. Public clients only (PKCE is their proof; no client secret is ever
-- issued, so none is stored). `switchboard-cli` is switchboard's own CLI, the only client that
-- may act as a human.
create table oauth_clients (
  client_id text primary key
    constraint oauth_clients_client_id_is_short check (length(client_id) between 1 and 2048),
  -- registered: dynamic client registration (RFC 7591); document: a client ID metadata document,
  -- fetched from the https URL that is its id; builtin: the CLI
  source text not null
    constraint oauth_clients_source_is_known check (source in ('registered', 'document', 'builtin')),
  -- the metadata as registered or fetched (redirect_uris, client_name, …), already checked
  metadata jsonb not null,
  created_at timestamptz not null default now(),
  fetched_at timestamptz,
  constraint oauth_clients_documents_are_https_urls
    check (source <> 'document' or client_id ~ '^https://[^/?#]+/[^#]+$')
);

insert into oauth_clients (client_id, source, metadata) values (
  'switchboard-cli',
  'builtin',
  '{"client_name": "switchboard CLI", "redirect_uris": ["http://127.0.0.1/callback"],
    "token_endpoint_auth_method": "none", "grant_types": ["authorization_code",
    "urn:ietf:params:oauth:grant-type:device_code"], "response_types": ["code"]}'
);

-- A human said yes: `client_id` acts as `principal_id` on `resource`. A client on /mcp acts as
-- an agent of the human who consented, never as a human; the CLI acts as that human on the API.
-- (principal_id, principal_kind) points at principals (id, kind), so the kind here is the kind
-- there, and the rules below hold in the database.
alter table principals add constraint principals_id_kind_key unique (id, kind);

create table oauth_grants (
  id bigint generated always as identity primary key,
  client_id text not null references oauth_clients (client_id),
  principal_id bigint not null,
  principal_kind principal_kind not null,
  granted_by bigint not null references principals (id),
  resource text not null
    constraint oauth_grants_resource_is_mcp_or_api check (resource ~ '^https?://[^?#]+/(mcp|api/v1)$'),
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz,
  constraint oauth_grants_principal_fkey foreign key (principal_id, principal_kind)
    references principals (id, kind),
  constraint oauth_grants_only_the_cli_acts_as_a_human
    check ((principal_kind = 'human') = (client_id = 'switchboard-cli')),
  constraint oauth_grants_a_human_grants_only_themself
    check (principal_kind = 'agent' or principal_id = granted_by),
  constraint oauth_grants_humans_on_the_api_agents_on_mcp
    check ((principal_kind = 'human') = (resource ~ '/api/v1$'))
);

create index oauth_grants_principal_id_idx on oauth_grants (principal_id);
create index oauth_grants_granted_by_idx on oauth_grants (granted_by);

-- Revoking a grant is told to every process like revoking a token (migration 0006): their
-- token caches forget, and their /mcp endpoints end the grant's sessions. The payload names the
-- grant, so that a process ends exactly its sessions.
create function notify_grant_revocation() returns trigger
language plpgsql as $$
begin
  perform pg_notify(tg_table_schema || '.revocations', 'oauth_grants ' || new.id);
  return null;
end
$$;

create trigger oauth_grants_notify_revocation
  after update of revoked_at on oauth_grants
  for each row when (new.revoked_at is distinct from old.revoked_at)
  execute function notify_grant_revocation();

-- One authorization, from the client's request to its tokens: requested (waiting for the human),
-- then approved (a grant made; the code, or the device code, may be exchanged once) or denied,
-- then exchanged. The code flow (authorization code + PKCE S256) comes from /oauth/authorize;
-- the device flow (RFC 8628, a code the human types into the console) is the CLI's, for a
-- terminal with no browser. Codes are stored as their SHA-256 only, as tokens are.
create table oauth_authorizations (
  -- random, in the consent page's address: not a credential (consent needs the human's session)
  id text primary key
    constraint oauth_authorizations_id_is_random check (id ~ '^[A-Za-z0-9_-]{22}$'),
  flow text not null
    constraint oauth_authorizations_flow_is_known check (flow in ('code', 'device')),
  client_id text not null references oauth_clients (client_id) on delete cascade,
  resource text not null,
  status text not null default 'requested'
    constraint oauth_authorizations_status_is_known
      check (status in ('requested', 'approved', 'denied', 'exchanged')),
  -- the code flow
  redirect_uri text,
  redirect_uri_sent boolean,
  code_challenge text
    constraint oauth_authorizations_code_challenge_is_s256 check (code_challenge ~ '^[A-Za-z0-9_-]{43}$'),
  state text
    constraint oauth_authorizations_state_is_short check (length(state) <= 1024),
  code_hash bytea
    constraint oauth_authorizations_code_hash_is_sha256 check (length(code_hash) = 32),
  -- the device flow
  device_code_hash bytea
    constraint oauth_authorizations_device_code_hash_is_sha256 check (length(device_code_hash) = 32),
  user_code text
    constraint oauth_authorizations_user_code_is_8_letters check (user_code ~ '^[B-Z]{8}$'),
  polled_at timestamptz,
  grant_id bigint references oauth_grants (id),
  created_at timestamptz not null default now(),
  -- the request's, until a decision; then the code's (or the device code's)
  expires_at timestamptz not null,
  decided_at timestamptz,
  exchanged_at timestamptz,
  constraint oauth_authorizations_code_hash_key unique (code_hash),
  constraint oauth_authorizations_device_code_hash_key unique (device_code_hash),
  constraint oauth_authorizations_user_code_key unique (user_code),
  constraint oauth_authorizations_code_flow_has_its_fields
    check (flow <> 'code' or (redirect_uri is not null and redirect_uri_sent is not null
      and code_challenge is not null and device_code_hash is null and user_code is null)),
  constraint oauth_authorizations_device_flow_has_its_fields
    check (flow <> 'device' or (device_code_hash is not null and user_code is not null
      and redirect_uri is null and code_challenge is null)),
  constraint oauth_authorizations_approved_has_a_grant
    check ((status in ('approved', 'exchanged')) = (grant_id is not null)),
  constraint oauth_authorizations_approved_code_flow_has_a_code
    check (flow <> 'code' or (status in ('approved', 'exchanged')) = (code_hash is not null)),
  constraint oauth_authorizations_decided_when_not_requested
    check ((status = 'requested') = (decided_at is null)),
  constraint oauth_authorizations_exchanged_when_exchanged
    check ((status = 'exchanged') = (exchanged_at is not null))
);

create index oauth_authorizations_expires_at_idx on oauth_authorizations (expires_at);

-- Access tokens are API tokens like every other (sbk_…, in `tokens`), with the grant they were
-- issued under and, for a client on /mcp, an expiry (an hour). Static tokens have neither.
alter table tokens
  add column grant_id bigint references oauth_grants (id),
  add column expires_at timestamptz;

create index tokens_grant_id_idx on tokens (grant_id) where grant_id is not null;

-- Refresh tokens rotate: each is used once (used_at), and the new access token comes with a new
-- refresh token. They end with their grant.
create table oauth_refresh_tokens (
  id bigint generated always as identity primary key,
  grant_id bigint not null references oauth_grants (id),
  hash bytea not null
    constraint oauth_refresh_tokens_hash_is_sha256 check (length(hash) = 32),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  used_at timestamptz,
  constraint oauth_refresh_tokens_hash_key unique (hash)
);

create index oauth_refresh_tokens_grant_id_idx on oauth_refresh_tokens (grant_id);

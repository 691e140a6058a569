-- The GitHub App that `switchboard github setup` registered through GitHub's manifest flow: what
-- GitHub's conversion of the manifest code gave back, kept so that every process on the database
-- uses it without a restart. Its three secrets and its private key are sealed with the server key
-- (AES-256-GCM: nonce, tag, ciphertext), as sources' secrets are, never stored in the clear: a
-- copy of the database alone can neither forge a delivery nor act as the App. What the
-- environment gives (APP_ID, PRIVATE_KEY, WEBHOOK_SECRET, GITHUB_CLIENT_ID/SECRET) wins over it.
create table github_app (
  -- A server has one App: setting up another replaces this row.
  one_row boolean primary key default true
    constraint github_app_is_one_row check (one_row),
  app_id bigint not null,
  -- As GitHub gave them: bounded, not shaped — a row refused here would lose an App whose code
  -- GitHub has already used up.
  slug text not null
    constraint github_app_slug_is_bounded check (slug <> '' and length(slug) <= 200),
  name text not null
    constraint github_app_name_is_bounded check (length(name) <= 200),
  html_url text not null
    constraint github_app_html_url_is_bounded check (length(html_url) <= 2048),
  -- The account (a user or an organization) that owns it.
  owner_login text
    constraint github_app_owner_login_is_bounded check (length(owner_login) <= 200),
  client_id text not null
    constraint github_app_client_id_is_bounded check (length(client_id) <= 200),
  client_secret bytea not null,
  -- Null only if GitHub made none (it makes one for every App with a webhook URL).
  webhook_secret bytea,
  private_key bytea not null,
  -- The admin who set it up.
  created_by text not null references principals (name),
  created_at timestamptz not null default now()
);

-- Every process hears of a new App (or a removed one) and starts using it at once.
create function notify_github_app_change() returns trigger
language plpgsql as $$
begin
  perform pg_notify(tg_table_schema || '.github_app', tg_op);
  return null;
end
$$;

create trigger github_app_notify_change
  after insert or update or delete on github_app
  for each statement execute function notify_github_app_change();

-- The manifest flow's `state`, one per visit of the setup page: GitHub sends it back with the
-- code, and it is taken once (deleted), by the console session that was shown the page, within
-- the hour GitHub gives the whole flow. Only its hash is kept.
create table github_app_setups (
  state_hash bytea primary key
    constraint github_app_setups_state_hash_is_sha256 check (length(state_hash) = 32),
  web_session_id bigint not null references web_sessions (id) on delete cascade,
  -- The organization the App is registered for; null: the admin's own account.
  org text
    constraint github_app_setups_org_is_bounded check (length(org) <= 100),
  expires_at timestamptz not null
);

create index github_app_setups_expires_at_idx on github_app_setups (expires_at);

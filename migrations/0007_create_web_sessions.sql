-- The web console's sign-in: one-time links minted for a human (by `switchboard open`), the
-- sessions a browser holds, and the numeric GitHub user id "Sign in with GitHub" finds a human by.

-- A one-time sign-in link: shown once, stored only as the SHA-256 of its secret (256 random bits,
-- so a fast hash is enough), valid for a few minutes and usable once.
create table web_sign_in_links (
  id bigint generated always as identity primary key,
  principal_id bigint not null references principals (id),
  hash bytea not null
    constraint web_sign_in_links_hash_is_sha256 check (length(hash) = 32),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  used_at timestamptz,
  constraint web_sign_in_links_hash_key unique (hash),
  constraint web_sign_in_links_expire_after_creation check (expires_at > created_at)
);

-- A browser's session: the cookie holds the secret, this table only its SHA-256. A session ends
-- when it expires (idle or at its absolute limit) or is signed out (the row is deleted).
create table web_sessions (
  id bigint generated always as identity primary key,
  principal_id bigint not null references principals (id),
  hash bytea not null
    constraint web_sessions_hash_is_sha256 check (length(hash) = 32),
  -- how the human signed in: a one-time link, or GitHub
  method text not null
    constraint web_sessions_method_is_known check (method in ('link', 'github')),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  constraint web_sessions_hash_key unique (hash)
);

create index web_sessions_principal_id_idx on web_sessions (principal_id);
create index web_sign_in_links_principal_id_idx on web_sign_in_links (principal_id);

-- GitHub logins can be renamed (and then taken by someone else); the numeric user id cannot. A
-- human an admin added with a login is bound to the id of the GitHub account that first signs in
-- with that login, and found by the id from then on. Kept beside principals, not in them: only
-- the console's sign-in reads it.
create table web_github_accounts (
  principal_id bigint primary key references principals (id),
  github_user_id bigint not null,
  bound_at timestamptz not null default now(),
  constraint web_github_accounts_github_user_id_key unique (github_user_id)
);

-- Principals are who can act on the ledger: humans, and the agents they own.
-- Names are the natural key (todos refer to assignees and holders by name), shared by humans
-- and agents so that a name alone always says who is meant.
create type principal_kind as enum ('human', 'agent');

create table principals (
  id bigint generated always as identity primary key,
  name text not null
    constraint principals_name_is_a_slug check (name ~ '^[a-z0-9][a-z0-9._-]{0,63}$'),
  kind principal_kind not null,
  github_login text
    constraint principals_github_login_is_valid check (github_login ~ '^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$'),
  is_admin boolean not null default false,
  owner text,
  queues text[],
  created_at timestamptz not null default now(),
  revoked_at timestamptz,
  constraint principals_name_key unique (name),
  constraint principals_owner_fkey foreign key (owner) references principals (name),
  constraint principals_agents_have_owner_and_queues
    check ((kind = 'agent') = (owner is not null and queues is not null)),
  constraint principals_agents_have_a_queue check (cardinality(queues) > 0),
  constraint principals_only_humans_are_admins check (kind = 'human' or not is_admin),
  constraint principals_only_humans_have_github_logins check (kind = 'human' or github_login is null)
);

-- GitHub logins are case-insensitive.
create unique index principals_github_login_key on principals (lower(github_login));

-- API tokens (sbk_…) are shown once and stored only as their SHA-256: they are 256 random bits,
-- so a fast hash is enough (nothing to brute-force) and lookup stays one index probe.
create table tokens (
  id bigint generated always as identity primary key,
  principal_id bigint not null references principals (id),
  hash bytea not null
    constraint tokens_hash_is_sha256 check (length(hash) = 32),
  created_at timestamptz not null default now(),
  revoked_at timestamptz,
  constraint tokens_hash_key unique (hash)
);

create index tokens_principal_id_idx on tokens (principal_id);

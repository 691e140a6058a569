-- Off-boarding (README "Off-boarding"): every token says how it was vended and when it was last
-- used, so that any one can be listed and revoked (`switchboard token list|revoke`); a human has
-- settings of their own (`switchboard human set`), the first a backup who takes their approvals
-- when they are deactivated; and an approval may wait for the admins rather than for one human.

-- How a token was vended: `up` (the first start's, or one `up` saved for a file with none),
-- `admin_token`, `human_add`, `human_reactivate`, `agent_add`, `login` (the CLI's sign-in through
-- the browser) or `oauth` (an MCP client's sign-in). Null only for a human's token from before
-- this was recorded (`up`, `admin token` or `human add`: it cannot be told which).
-- `last_used_at` is noted when a process looks the token up, at most once a minute (each process
-- keeps what it found in memory for a minute: src/http/token-cache.ts), never once a request.
alter table tokens
  add column kind text
    constraint tokens_kind_is_known check (kind in
      ('up', 'admin_token', 'human_add', 'human_reactivate', 'agent_add', 'login', 'oauth')),
  add column last_used_at timestamptz,
  add constraint tokens_sign_ins_have_grants check ((grant_id is not null) = (kind in ('login', 'oauth')));

update tokens t set kind = case
    when t.grant_id is not null then (
      select case when g.client_id = 'switchboard-cli' then 'login' else 'oauth' end
      from oauth_grants g where g.id = t.grant_id)
    when p.kind = 'agent' then 'agent_add'
  end
from principals p
where p.id = t.principal_id;

-- A human's own settings, one row once any is set. (principal_id, principal_kind) and
-- (backup_id, backup_kind) point at principals (id, kind), so both are humans in the database.
create table human_settings (
  principal_id bigint primary key,
  principal_kind principal_kind not null default 'human'
    constraint human_settings_are_humans check (principal_kind = 'human'),
  -- who takes their pending approvals when they are deactivated
  backup_id bigint,
  backup_kind principal_kind not null default 'human'
    constraint human_settings_backups_are_humans check (backup_kind = 'human'),
  updated_at timestamptz not null default now(),
  constraint human_settings_principal_fkey foreign key (principal_id, principal_kind)
    references principals (id, kind),
  constraint human_settings_backup_fkey foreign key (backup_id, backup_kind)
    references principals (id, kind),
  constraint human_settings_backup_is_someone_else check (backup_id <> principal_id)
);

create index human_settings_backup_id_idx on human_settings (backup_id) where backup_id is not null;

-- An approval whose human was deactivated with no backup waits for the admins: no assignee. Only
-- a human decides it still (the verdict trigger), and only an admin may (an assignee of none is
-- nobody's own): a human who is not an admin sees it only if they asked for it, as before.
alter table todos drop constraint todos_approvals_are_owned_and_never_claimed;
alter table todos add constraint todos_approvals_are_owned_and_never_claimed check (
  -- an approval belongs to a human (or, with no assignee, to the admins), names who asked,
  -- expires, and is never claimed
  kind <> 'approval'
  or (requested_by is not null and expires_at is not null
      and state in ('pending', 'done', 'canceled') and available_at is null)
);

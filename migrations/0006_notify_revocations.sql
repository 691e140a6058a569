-- Revocations, told at once to every server process: each keeps the principals of recently
-- seen tokens in memory (src/http/token-cache.ts), so that a request does not cost a lookup,
-- and clears them when a token or a principal is revoked. The channel carries the schema, as
-- the wakes' does, so that schemas sharing a database do not hear each other.
create function notify_revocation() returns trigger
language plpgsql as $$
begin
  perform pg_notify(tg_table_schema || '.revocations', tg_table_name);
  return null;
end
$$;

create trigger tokens_notify_revocation
  after update of revoked_at on tokens
  for each row when (new.revoked_at is distinct from old.revoked_at)
  execute function notify_revocation();

create trigger principals_notify_revocation
  after update of revoked_at on principals
  for each row when (new.revoked_at is distinct from old.revoked_at)
  execute function notify_revocation();

-- A token deleted outright (nothing does so today) ends at once too.
create trigger tokens_notify_deletion
  after delete on tokens
  for each row execute function notify_revocation();

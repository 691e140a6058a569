-- Streams end with their credentials: every process keeps the live streams it serves (the
-- console's pages, the API's event streams, MCP notification streams) tied to the session or
-- token that opened them (src/http/revocation-watch.ts), and ends them the moment that session
-- is signed out or that token or principal revoked, in whichever process it happened. The
-- revocations' NOTIFY now names the row (`tokens:12`, `principals:3`, `web_sessions:40`), so
-- that a process ends exactly the streams concerned without asking the database again; the
-- token cache still forgets every token on a token's or a principal's.
create or replace function notify_revocation() returns trigger
language plpgsql as $$
begin
  if tg_op = 'DELETE' then
    perform pg_notify(tg_table_schema || '.revocations', tg_table_name || ':' || old.id);
  else
    perform pg_notify(tg_table_schema || '.revocations', tg_table_name || ':' || new.id);
  end if;
  return null;
end
$$;

-- Signing out deletes the session's row. (A session that expires is not told of: each process
-- ends its streams at the session's expiry itself.)
create trigger web_sessions_notify_end
  after delete on web_sessions
  for each row execute function notify_revocation();

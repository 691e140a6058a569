-- Credentials found in the text a todo is made of (its title, body, quarantine reason; a verdict's
-- note), withheld from that text, which says `[secret:ID]` in their place (src/contract/
-- withhold-secrets.ts). The value is sealed under the server key (AES-256-GCM, as a source's
-- secrets are): the database alone holds nothing usable. It lives and dies with its todo; the
-- retention pass drops it once the todo finished that long ago (src/retention/prune-old-rows.ts).
create table todo_secrets (
  -- Made by the server, so that the text can name it before the todo is inserted.
  id text primary key constraint todo_secrets_id_is_a_reference check (id ~ '^[a-km-np-z2-9]{12}$'),
  todo_id bigint not null references todos (id) on delete cascade,
  -- The rule that found it (`github`, `aws`, `privatekey`, `jwt`, `generic`, …).
  rule text not null,
  sealed bytea not null,
  created_at timestamptz not null default now()
);

create index todo_secrets_todo_idx on todo_secrets (todo_id);

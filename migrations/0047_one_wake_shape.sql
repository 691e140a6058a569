-- A todo's wake, as JSON, built in one place on the database's side (src/contract/wake.ts is its
-- shape; the wake notifier, src/wakes/wake-notifier.ts, writes the same JSON after a commit): the
-- todos' trigger and the wake of a todo that a freed slot lets in (src/data/todos/
-- wake-held-back.ts) both call it. Its wake_id is the writing transaction's id, the notifier's
-- too: with todo_id it names one wake, however many processes hear it and whichever writer sent it.
create function todo_wake(t todos) returns text
language sql as $$
  select json_build_object(
    'todo_id', t.id,
    'queue', t.queue,
    -- who may act on it, so listeners can route the wake without reading the todo
    'assignee', t.assignee,
    'requested_by', t.requested_by,
    'wake_id', pg_current_xact_id()::text,
    'event', case
      when t.verdict is not null then 'verdict'
      when t.kind = 'approval' then 'approval'
      else 'claimable'
    end
  )::text
$$;

-- As migrations/0012 left it, the payload built by todo_wake.
create or replace function todos_notify_wake() returns trigger
language plpgsql as $$
begin
  if tg_op = 'INSERT' and current_setting('switchboard.announce_new_todos', true) = 'on' then
    return null;
  end if;
  perform pg_notify(tg_table_schema || '.wakes', todo_wake(new));
  return null;
end
$$;

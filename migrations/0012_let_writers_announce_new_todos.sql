-- A new todo's wake may be announced by its writer after the commit instead of inside it.
-- PostgreSQL holds a database-wide lock from a notifying transaction's pre-commit through its
-- WAL flush, so transactions that NOTIFY commit one at a time, never in a group: at 16
-- deliveries at once, every todo waited for every other's flush. A writer that sets
-- `switchboard.announce_new_todos` for its transaction takes the job over (src/delivery/
-- wake-notifier.ts sends many wakes in one cheap transaction); the trigger then stays quiet
-- for inserts only. Every other change (a release, a verdict, a lease ending) still notifies
-- here, so no path can forget; and a wake that never comes is still found by the dispatchers'
-- catch-up read.
create or replace function todos_notify_wake() returns trigger
language plpgsql as $$
begin
  if tg_op = 'INSERT' and current_setting('switchboard.announce_new_todos', true) = 'on' then
    return null;
  end if;
  perform pg_notify(
    tg_table_schema || '.wakes',
    json_build_object(
      'todo_id', new.id,
      'queue', new.queue,
      -- who may act on it, so listeners can route the wake without reading the todo
      'assignee', new.assignee,
      'requested_by', new.requested_by,
      -- the transaction that made the change: one wake, however many processes hear it
      'wake_id', pg_current_xact_id()::text,
      'event', case
        when new.verdict is not null then 'verdict'
        when new.kind = 'approval' then 'approval'
        else 'claimable'
      end
    )::text
  );
  return null;
end
$$;

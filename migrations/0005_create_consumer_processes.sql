-- A server process's liveness, refreshed by its heartbeat, kept apart from its consumers'
-- sessions. The heartbeat used to refresh every session row of its process; a ring choosing a
-- session skips rows that are locked (so that rings at the same instant spread across
-- sessions), and so passed over whichever session the heartbeat held that moment, breaking the
-- round-robin. A session is live while its process is.
create table consumer_processes (
  id uuid primary key,
  seen_at timestamptz not null default now()
);

insert into consumer_processes (id, seen_at)
select process_id, max(seen_at) from consumer_sessions group by process_id;

alter table consumer_sessions drop column seen_at;

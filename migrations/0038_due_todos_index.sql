-- The sweeper (src/ledger/sweep-todos.ts) looks every 5 seconds, in every process, for leases
-- that have ended (`claimed`) and retries that are due (`failed`, with a time to retry at). No
-- index served either: each look was a scan of the whole table, which grows with every todo ever
-- made — 19 ms a sweep at 10⁵ todos, seconds at 10⁷. This one holds only the todos in flight or
-- waiting to be retried, oldest first.
create index todos_due_idx on todos (available_at)
  where state in ('claimed', 'failed') and available_at is not null;

-- A todo's history is read in time order (`order by at, id`), so `at` must say when each event
-- happened. `now()` is when its transaction began: a claim that waited on the todo's row lock
-- behind another change was stamped before that change although it came after it, and ids, taken
-- when a row is written, do not follow commits either. `clock_timestamp()` is the moment the
-- event row is written, which for changes of one todo (serialised by its row lock) is their order.
alter table todo_events alter column at set default clock_timestamp();

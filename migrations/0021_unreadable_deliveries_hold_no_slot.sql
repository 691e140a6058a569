-- A delivery recorded `unreadable` was not understood (GitLab's deliveries are answered 200 and
-- recorded so even when a header or the body is wrong, since GitLab disables a hook that keeps
-- failing): it must not hold its delivery id, nor its body, against the corrected delivery that
-- follows. Like a duplicate receipt, it no longer counts as the record of its delivery id, and
-- the replay defence (src/providers/find-replay.ts) looks past it.

drop index github_deliveries_recorded_once;
create unique index github_deliveries_recorded_once
  on github_deliveries (delivery_id) where disposition not in ('duplicate', 'unreadable');

drop index github_deliveries_body_idx;
create index github_deliveries_body_idx on github_deliveries (body_sha256, received_at)
  where disposition not in ('duplicate', 'unreadable') and body_sha256 is not null;

drop index source_deliveries_recorded_once;
create unique index source_deliveries_recorded_once
  on source_deliveries (source, delivery_id) where disposition not in ('duplicate', 'unreadable');

drop index source_deliveries_body_idx;
create index source_deliveries_body_idx on source_deliveries (source, body_sha256, received_at)
  where disposition not in ('duplicate', 'unreadable');

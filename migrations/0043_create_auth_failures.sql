-- Failed authentications per client address, counted in fixed windows, shared by every server
-- process on the database: kept in each process's memory, N replicas behind a load balancer let
-- an address fail N times the limit. Only failures write here (a bad bearer token, a webhook
-- body that fails its signature, a sign-in link that does not work, a wrong device code), each
-- one upsert; a valid credential never reads or writes it. `limiter` names the count
-- (`auth`: tokens and signatures, `sign-in`, `device`); `key` is what it counts (`token:ADDRESS`,
-- …). A row whose window ended is counted afresh by the next failure, and pruned by retention.
create table auth_failures (
  limiter text not null
    constraint auth_failures_limiter_is_bounded check (length(limiter) between 1 and 32),
  key text not null
    constraint auth_failures_key_is_bounded check (length(key) between 1 and 200),
  failures integer not null
    constraint auth_failures_failures_are_counted check (failures >= 1),
  window_ends_at timestamptz not null,
  primary key (limiter, key)
);

create index auth_failures_window_ends_at_idx on auth_failures (window_ends_at);

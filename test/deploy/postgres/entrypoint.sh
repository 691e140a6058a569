#!/bin/sh
# First start: a cluster with POSTGRES_USER (password POSTGRES_PASSWORD) owning POSTGRES_DB, as
# the official image makes. Then PostgreSQL itself, listening on the container's network.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
  user=${POSTGRES_USER:-postgres}
  password_file=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$password_file"
  initdb --username="$user" --pwfile="$password_file" --auth-local=trust \
    --auth-host=scram-sha-256 --encoding=UTF8 >/dev/null
  rm -f "$password_file"
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  if [ "${POSTGRES_DB:-$user}" != postgres ]; then
    echo "CREATE DATABASE \"${POSTGRES_DB:-$user}\" OWNER \"$user\"" |
      postgres --single -D "$PGDATA" -j postgres >/dev/null
  fi
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'

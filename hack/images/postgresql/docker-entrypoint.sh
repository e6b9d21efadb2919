#!/bin/sh
# database-controller's entrypoint for Debian's PostgreSQL, written to the
# environment contract of the official postgres image: POSTGRES_USER
# (default postgres), POSTGRES_PASSWORD, POSTGRES_DB (default the user),
# PGDATA, POSTGRES_INITDB_ARGS, POSTGRES_HOST_AUTH_METHOD (default
# scram-sha-256), and /docker-entrypoint-initdb.d/*.sql, *.sql.gz and *.sh
# run once, on first init, against a server that listens on its socket only.
# An existing data directory is never touched: postgres is started on it.
set -eu
[ "${1:-}" = postgres ] || exec "$@"
: "${PGDATA:=/var/lib/postgresql/data}" "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}" "${POSTGRES_HOST_AUTH_METHOD:=scram-sha-256}"
export PGDATA

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != trust ]; then
    echo "entrypoint: the database is not initialised and POSTGRES_PASSWORD is not set" >&2
    exit 1
  fi
  mkdir -p "$PGDATA"
  chmod 700 "$PGDATA"
  pwfile=$(mktemp)
  printf '%s\n' "${POSTGRES_PASSWORD:-}" > "$pwfile"
  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of arguments
  initdb --username="$POSTGRES_USER" --pwfile="$pwfile" ${POSTGRES_INITDB_ARGS:-}
  rm -f "$pwfile"
  printf "listen_addresses = '*'\n" >> "$PGDATA/postgresql.conf"
  printf 'host all all all %s\n' "$POSTGRES_HOST_AUTH_METHOD" >> "$PGDATA/pg_hba.conf"

  pg_ctl -w -o "-c listen_addresses='' -c unix_socket_directories=/var/run/postgresql" start
  export PGHOST=/var/run/postgresql PGUSER="$POSTGRES_USER"
  if [ "$POSTGRES_DB" != postgres ]; then
    echo 'CREATE DATABASE :"db";' | psql -v ON_ERROR_STOP=1 -d postgres -v db="$POSTGRES_DB"
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "entrypoint: running $f"; . "$f" ;;
      *.sql) echo "entrypoint: running $f"; psql -v ON_ERROR_STOP=1 -d "$POSTGRES_DB" -f "$f" ;;
      *.sql.gz) echo "entrypoint: running $f"; gzip -dc "$f" | psql -v ON_ERROR_STOP=1 -d "$POSTGRES_DB" ;;
      */\*) ;;
      *) echo "entrypoint: ignoring $f" ;;
    esac
  done
  pg_ctl -w -m fast stop
  unset PGHOST PGUSER
  echo "entrypoint: initialised $PGDATA; starting postgres"
fi
exec "$@"

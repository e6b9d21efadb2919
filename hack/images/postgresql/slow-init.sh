# shellcheck shell=sh
# A first-init script for the real node's slow-init PostgreSQL image
# (localhost/dbc/postgresql-slowinit:15): the entrypoint sources it from
# /docker-entrypoint-initdb.d while the temporary server listens on its
# socket only, so TCP probes fail all along. It takes longer than the
# liveness budget (6 failures 10 s apart), then records that it ran to its
# end. test/e2e/realnode checks for the table: a container killed during
# init restarts on a data directory that exists, skips the init, and never
# creates it.
echo "slow-init: sleeping 100s, longer than the liveness budget"
sleep 100
psql -v ON_ERROR_STOP=1 -d "$POSTGRES_DB" -c 'CREATE TABLE init_completed (at timestamptz NOT NULL DEFAULT now()); INSERT INTO init_completed DEFAULT VALUES'
echo "slow-init: done"

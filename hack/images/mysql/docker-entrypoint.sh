#!/bin/sh
# database-controller's entrypoint for Debian's MySQL (Oracle's server),
# written to the environment contract of the official mysql image:
# MYSQL_ROOT_PASSWORD (or MYSQL_ALLOW_EMPTY_PASSWORD), MYSQL_ROOT_HOST
# (default %), MYSQL_DATABASE, MYSQL_USER and MYSQL_PASSWORD, and
# /docker-entrypoint-initdb.d/*.sql, *.sql.gz and *.sh run once, on first
# init, against a server that listens on its socket only. An existing data
# directory is never touched.
set -eu
# Arguments that begin with "-" are the server's, as in the official image.
case "${1:-}" in -*) set -- mysqld "$@" ;; esac
[ "${1:-}" = mysqld ] || exec "$@"
datadir=/var/lib/mysql
# SOCKET is the temporary server's socket, named as in the official image:
# init scripts (sourced) use it.
SOCKET=/var/run/mysqld/init.sock

CLIENT=mysql
# shellcheck source=../mysql-init.sh
. /usr/local/lib/dbc/mysql-init.sh

if [ ! -d "$datadir/mysql" ]; then
  require_root_password
  # root@localhost with no password, for the few statements below.
  "$@" --initialize-insecure --datadir="$datadir"
  start_temporary_server mysqladmin "$@"
  init_accounts
  run_init_scripts
  mysqladmin --socket="$SOCKET" -uroot shutdown
  wait "$pid"
  unset MYSQL_PWD
  echo "entrypoint: initialised $datadir; starting mysqld"
fi
exec "$@"

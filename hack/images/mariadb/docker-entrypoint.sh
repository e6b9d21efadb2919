#!/bin/sh
# database-controller's entrypoint for Debian's MariaDB, written to the
# environment contract of the official mysql image: MYSQL_ROOT_PASSWORD (or
# MYSQL_ALLOW_EMPTY_PASSWORD), MYSQL_ROOT_HOST (default %), MYSQL_DATABASE,
# MYSQL_USER and MYSQL_PASSWORD, and /docker-entrypoint-initdb.d/*.sql,
# *.sql.gz and *.sh run once, on first init, against a server that listens
# on its socket only. An existing data directory is never touched.
set -eu
# Arguments that begin with "-" are the server's, as in the official image.
case "${1:-}" in -*) set -- mariadbd "$@" ;; esac
[ "${1:-}" = mariadbd ] || exec "$@"
datadir=/var/lib/mysql
# SOCKET is the temporary server's socket, named as in the official image:
# init scripts (sourced) use it.
SOCKET=/var/run/mysqld/init.sock

CLIENT=mariadb
# shellcheck source=../mysql-init.sh
. /usr/local/lib/dbc/mysql-init.sh

if [ ! -d "$datadir/mysql" ]; then
  require_root_password
  mariadb-install-db --datadir="$datadir" --auth-root-authentication-method=normal \
    --skip-test-db --skip-name-resolve > /dev/null
  start_temporary_server mariadb-admin "$@"
  # mariadb-install-db also makes root@127.0.0.1, root@::1, root@<hostname>
  # (no password) and anonymous users: drop them, so that root has the one
  # password everywhere (a TCP login from 127.0.0.1 would otherwise be
  # root@127.0.0.1's, without a password).
  mariadb --socket="$SOCKET" -uroot -N -e "SELECT CONCAT('DROP USER ', QUOTE(User), '@', QUOTE(Host), ';')
    FROM mysql.user WHERE User = '' OR (User = 'root' AND Host <> 'localhost')" | mariadb --socket="$SOCKET" -uroot
  init_accounts
  run_init_scripts
  mariadb-admin --socket="$SOCKET" -uroot shutdown
  wait "$pid"
  unset MYSQL_PWD
  echo "entrypoint: initialised $datadir; starting mariadbd"
fi
exec "$@"

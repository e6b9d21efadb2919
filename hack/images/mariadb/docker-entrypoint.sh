#!/bin/sh
# database-controller's entrypoint for Debian's MariaDB, written to the
# environment contract of the official mysql image: MYSQL_ROOT_PASSWORD (or
# MYSQL_ALLOW_EMPTY_PASSWORD), MYSQL_ROOT_HOST (default %), MYSQL_DATABASE,
# MYSQL_USER and MYSQL_PASSWORD, and /docker-entrypoint-initdb.d/*.sql,
# *.sql.gz and *.sh run once, on first init, against a server that listens
# on its socket only. An existing data directory is left as it is, but for
# MARIADB_AUTO_UPGRADE, the official mariadb image's: set (and not 0), a
# data directory last upgraded by an older release series than this
# server's has its system tables upgraded (mariadb-upgrade) before the
# server starts, on a temporary server, after a dump of the system database
# to system_mysql_backup_<old version>.sql.gz beside the data.
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
elif [ -n "${MARIADB_AUTO_UPGRADE:-}" ] && [ "$MARIADB_AUTO_UPGRADE" != 0 ]; then
  # series VERSION prints VERSION's major.minor as one number to compare.
  series() { echo "$1" | sed -n 's/^\([0-9]*\)\.\([0-9]*\).*/\1 \2/p' | { read -r a b && echo $((a * 1000 + b)); }; }
  new=$("$1" --version | sed -n 's/.* Ver \([0-9][0-9.]*\).*/\1/p')
  old=
  for f in "$datadir/mariadb_upgrade_info" "$datadir/mysql_upgrade_info"; do
    [ -z "$old" ] && [ -r "$f" ] && old=$(tr -d '\0\n' < "$f")
  done
  if [ -z "$old" ] || [ "$(series "$old")" -lt "$(series "$new")" ]; then
    echo "entrypoint: the data was last upgraded by ${old:-an unknown version}; upgrading its system tables to $new"
    start_temporary_server mariadb-admin "$@" --skip-grant-tables --skip-slave-start
    mariadb-dump --socket="$SOCKET" --skip-lock-tables --replace --databases mysql |
      gzip > "$datadir/system_mysql_backup_${old:-unknown_version}.sql.gz"
    mariadb-upgrade --socket="$SOCKET" --upgrade-system-tables
    # mariadb-upgrade ends with FLUSH PRIVILEGES: the grant tables apply
    # again, so the server is stopped by its signal, not by a login.
    kill "$pid"
    wait "$pid"
    echo "entrypoint: upgraded the system tables to $new; starting mariadbd"
  fi
fi
exec "$@"

#!/bin/sh
# database-controller's entrypoint for Debian's MariaDB, written to the
# environment contract of the official mysql image: MYSQL_ROOT_PASSWORD (or
# MYSQL_ALLOW_EMPTY_PASSWORD), MYSQL_ROOT_HOST (default %), MYSQL_DATABASE,
# MYSQL_USER and MYSQL_PASSWORD, and /docker-entrypoint-initdb.d/*.sql,
# *.sql.gz and *.sh run once, on first init, against a server that listens
# on its socket only. An existing data directory is never touched.
set -eu
[ "${1:-}" = mariadbd ] || exec "$@"
datadir=/var/lib/mysql
# SOCKET is the temporary server's socket, named as in the official image:
# init scripts (sourced) use it.
SOCKET=/var/run/mysqld/init.sock

# sql_str VALUE prints VALUE as the body of a quoted SQL string.
sql_str() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e "s/'/\\\\'/g"; }
# sql_id VALUE prints VALUE as the body of a backquoted SQL identifier.
sql_id() { printf '%s' "$1" | sed -e 's/`/``/g'; }

if [ ! -d "$datadir/mysql" ]; then
  if [ -z "${MYSQL_ROOT_PASSWORD:-}" ] && [ -z "${MYSQL_ALLOW_EMPTY_PASSWORD:-}" ]; then
    echo "entrypoint: the database is not initialised and MYSQL_ROOT_PASSWORD is not set" >&2
    exit 1
  fi
  mariadb-install-db --datadir="$datadir" --auth-root-authentication-method=normal \
    --skip-test-db --skip-name-resolve > /dev/null
  "$@" --skip-networking --socket="$SOCKET" &
  pid=$!
  until mariadb-admin --socket="$SOCKET" -uroot ping --silent 2>/dev/null; do
    kill -0 "$pid" || { echo "entrypoint: the temporary server exited" >&2; exit 1; }
    sleep 0.3
  done
  # mariadb-install-db also makes root@127.0.0.1, root@::1, root@<hostname>
  # (no password) and anonymous users: drop them, so that root has the one
  # password everywhere (a TCP login from 127.0.0.1 would otherwise be
  # root@127.0.0.1's, without a password).
  mariadb --socket="$SOCKET" -uroot -N -e "SELECT CONCAT('DROP USER ', QUOTE(User), '@', QUOTE(Host), ';')
    FROM mysql.user WHERE User = '' OR (User = 'root' AND Host <> 'localhost')" | mariadb --socket="$SOCKET" -uroot
  pw=$(sql_str "${MYSQL_ROOT_PASSWORD:-}")
  {
    echo "SET @@SESSION.SQL_LOG_BIN=0;"
    echo "ALTER USER 'root'@'localhost' IDENTIFIED BY '$pw';"
    if [ "${MYSQL_ROOT_HOST:-%}" != localhost ]; then
      echo "CREATE USER 'root'@'$(sql_str "${MYSQL_ROOT_HOST:-%}")' IDENTIFIED BY '$pw';"
      echo "GRANT ALL ON *.* TO 'root'@'$(sql_str "${MYSQL_ROOT_HOST:-%}")' WITH GRANT OPTION;"
    fi
    [ -z "${MYSQL_DATABASE:-}" ] || echo "CREATE DATABASE IF NOT EXISTS \`$(sql_id "$MYSQL_DATABASE")\`;"
    if [ -n "${MYSQL_USER:-}" ] && [ -n "${MYSQL_PASSWORD:-}" ]; then
      echo "CREATE USER '$(sql_str "$MYSQL_USER")'@'%' IDENTIFIED BY '$(sql_str "$MYSQL_PASSWORD")';"
      [ -z "${MYSQL_DATABASE:-}" ] ||
        echo "GRANT ALL ON \`$(sql_id "$MYSQL_DATABASE")\`.* TO '$(sql_str "$MYSQL_USER")'@'%';"
    fi
  } | mariadb --socket="$SOCKET" -uroot
  export MYSQL_PWD="${MYSQL_ROOT_PASSWORD:-}"
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "entrypoint: running $f"; . "$f" ;;
      *.sql) echo "entrypoint: running $f"; mariadb --socket="$SOCKET" -uroot ${MYSQL_DATABASE:+"$MYSQL_DATABASE"} < "$f" ;;
      *.sql.gz) echo "entrypoint: running $f"; gzip -dc "$f" | mariadb --socket="$SOCKET" -uroot ${MYSQL_DATABASE:+"$MYSQL_DATABASE"} ;;
      */\*) ;;
      *) echo "entrypoint: ignoring $f" ;;
    esac
  done
  mariadb-admin --socket="$SOCKET" -uroot shutdown
  wait "$pid"
  unset MYSQL_PWD
  echo "entrypoint: initialised $datadir; starting mariadbd"
fi
exec "$@"

# shellcheck shell=sh
# The first init that the entrypoints of MariaDB (mariadb/) and MySQL
# (mysql/) share, to the official mysql image's contract, sourced by both.
# $CLIENT is the image's client (mariadb or mysql), and $SOCKET the
# temporary server's socket.

# require_root_password stops the first init when no root password is set.
require_root_password() {
  if [ -z "${MYSQL_ROOT_PASSWORD:-}" ] && [ -z "${MYSQL_ALLOW_EMPTY_PASSWORD:-}" ]; then
    echo "entrypoint: the database is not initialised and MYSQL_ROOT_PASSWORD is not set" >&2
    exit 1
  fi
}

# start_temporary_server ADMIN SERVER... starts SERVER on $SOCKET alone, in
# the background (its PID in $pid), and waits until ADMIN pings it.
start_temporary_server() {
  admin=$1; shift
  "$@" --skip-networking --socket="$SOCKET" &
  pid=$!
  until "$admin" --socket="$SOCKET" -uroot ping --silent 2>/dev/null; do
    kill -0 "$pid" || { echo "entrypoint: the temporary server exited" >&2; exit 1; }
    sleep 0.3
  done
}

# sql_str VALUE prints VALUE as the body of a quoted SQL string.
sql_str() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e "s/'/\\\\'/g"; }
# sql_id VALUE prints VALUE as the body of a backquoted SQL identifier.
sql_id() { printf '%s' "$1" | sed -e 's/`/``/g'; }

# init_accounts gives root@localhost MYSQL_ROOT_PASSWORD, makes root at
# MYSQL_ROOT_HOST (default %) with it, the database MYSQL_DATABASE, and
# MYSQL_USER with MYSQL_PASSWORD and all privileges on that database. None
# of it goes to the binary log: it is no change for replicas to apply.
init_accounts() {
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
  } | "$CLIENT" --socket="$SOCKET" -uroot
}

# run_init_scripts runs /docker-entrypoint-initdb.d/*.sql and *.sql.gz into
# MYSQL_DATABASE as root, and sources *.sh, in name order.
run_init_scripts() {
  export MYSQL_PWD="${MYSQL_ROOT_PASSWORD:-}"
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "entrypoint: running $f"; . "$f" ;;
      *.sql) echo "entrypoint: running $f"; "$CLIENT" --socket="$SOCKET" -uroot ${MYSQL_DATABASE:+"$MYSQL_DATABASE"} < "$f" ;;
      *.sql.gz) echo "entrypoint: running $f"; gzip -dc "$f" | "$CLIENT" --socket="$SOCKET" -uroot ${MYSQL_DATABASE:+"$MYSQL_DATABASE"} ;;
      */\*) ;;
      *) echo "entrypoint: ignoring $f" ;;
    esac
  done
}

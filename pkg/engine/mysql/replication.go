package mysql

import (
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/mysqlsql"
)

// settingsFile is the configuration the init script writes before every
// start, which the server reads after the image's own (its first
// argument: --defaults-extra-file must come first).
const settingsFile = "/var/run/mysqld/dbc-replication.cnf"

// replication is MySQL's GTID replication on the official mysql image,
// with the image's own binaries.
var replication = engine.Replication{
	// The image's entrypoint puts the server before arguments that begin
	// with "-".
	ServerArgs: []string{"--defaults-extra-file=" + settingsFile},
	// A MariaDB server starts read-only while it is a replica (MariaDB
	// keeps master.info then) or fenced (the controller's marker): it has
	// no SET PERSIST, and the kubelet restarts the container without the
	// init script. Neither file is ever in a MySQL server's data
	// directory: its settings persist.
	ServerCommand: []string{"sh", "-c", `if [ -e /var/lib/mysql/master.info ] || [ -e ` + fencedMarker + ` ]; then set -- "$@" --read-only; fi
exec docker-entrypoint.sh "$@"`, "server"},
	InitScript: initScript,
	// With the event scheduler on (MySQL's default), a primary that
	// replicas are connected to took 9.6 s to shut down, and 2.9 s once
	// it was turned off first (MySQL 9.7): the failover after the
	// deletion of its pod waits for that shutdown, which sends the
	// replicas its last transactions. The setting is not persisted: the
	// next start has it as configured. A server that refuses the login
	// only shuts down slower.
	PreStop: []string{"sh", "-c", `MYSQL_PWD="$MYSQL_ROOT_PASSWORD" "$(command -v mysql || command -v mariadb)" --protocol=socket -uroot ` +
		`-e "SET GLOBAL event_scheduler = OFF" || true`},
}

// fencedMarker is the file a fenced MariaDB server has in its data
// directory until it rejoins as a replica (package mysqlsql's
// FencedMarker: its Fence writes it).
const fencedMarker = mysqlsql.FencedMarker

// initScript runs before every start of a replicated MySQL server. The
// client Service routes only to the pod the controller labelled primary,
// so asking it "who serves writes?" is asking the controller's decision,
// with no API access from the pod.
//
// It first writes the settings replication needs: a server id from the
// ordinal, the pod's name as report_host (a primary lists its replicas by
// it), GTIDs, a binary log of rows synced at each commit that replicas log
// too, crash-safe relay logs, a short network timeout so that a replica
// finds a new primary soon, and the semi-synchronous plugins, a replica
// acknowledging what it receives (the controller turns the primary's side
// on and off: package mysqlsql's SetSynchronous). The replica's setting is
// "loose-": a first init (--initialize) loads no plugin, and would stop at
// a setting of one it does not know, leaving half-initialised data. Then:
//
//   - No data: clone it from the primary (the clone plugin, from a
//     temporary server of its own, into a scratch directory moved into
//     place once complete), and start as its replica. The primary gets the
//     clone plugin first, and GTIDs if it served alone before without
//     them. With no primary to clone from, ordinal 0 initialises new data
//     (the entrypoint's first init), and any other ordinal waits.
//   - Another pod is the primary, and its binary logs no longer hold
//     transactions the data lacks (purged while this server was away):
//     the data holds nothing the primary lacks, so it is removed and
//     cloned again.
//   - Another pod is the primary: start as its replica. A temporary
//     server of the data, which replicates nothing and listens on a socket
//     only, points it at the client Service (so that it follows a new
//     primary by itself) with the Secret's password as it is now, and
//     persists read_only and super_read_only (SET PERSIST), so that every
//     later start, the kubelet's restart of the container too, is a
//     replica's until the controller promotes it.
//   - No primary answers: a replica (read_only persisted) starts as it
//     was; a primary the controller fenced (super_read_only alone
//     persisted, by package mysqlsql's Fence) waits for a new primary, to
//     rejoin it; a primary starts as it was.
//
// Nothing it decides is left for a later start to replay: a primary that
// was a replica when its pod started restarts as the primary it is.
//
// MariaDB (found by its server's name) gets its server id and
// report_host; it may serve alone, and refuses to become a replica, which
// it cannot yet.
const initScript = `set -eu
say() { echo "replication: $*"; }
fail() { echo "$*" | tee /dev/termination-log >&2; exit 1; }
umask 077
datadir=/var/lib/mysql
run=/var/run/mysqld
cnf="` + settingsFile + `"
persisted="$datadir/mysqld-auto.cnf"
ordinal=${POD_NAME##*-}
` + clientTLS + `client=mysql
server=mysqld
admin=mysqladmin
if [ "$dialect" = mariadb ]; then client=mariadb server=mariadbd admin=mariadb-admin; fi
# source_tls and master_tls are the replication channel's TLS, MySQL's and
# MariaDB's: with the Database's authorities, the primary's certificate
# and name verified. Without, MySQL's channel is encrypted (the server's
# own certificate) and set back explicitly to no authority, which CHANGE
# REPLICATION SOURCE would otherwise keep from an earlier start.
source_tls="SOURCE_SSL_CA='', SOURCE_SSL_VERIFY_SERVER_CERT=0"
master_tls=
if [ -n "$tls" ]; then
  source_tls="SOURCE_SSL_CA='$DBC_TLS_CA', SOURCE_SSL_VERIFY_SERVER_CERT=1"
  master_tls="MASTER_SSL=1, MASTER_SSL_CA='$DBC_TLS_CA', MASTER_SSL_VERIFY_SERVER_CERT=1,"
fi
{
  echo "[mysqld]"
  echo "server-id=$((ordinal + 1))"
  echo "report-host=$POD_NAME"
  if [ "$dialect" = mariadb ]; then
    cat <<EOF
log-bin=binlog
log-slave-updates=ON
binlog-format=ROW
sync-binlog=1
innodb-flush-log-at-trx-commit=1
relay-log=relay-bin
relay-log-recovery=ON
slave-net-timeout=10
gtid-strict-mode=ON
rpl-semi-sync-slave-enabled=ON
EOF
  else
    cat <<EOF
gtid-mode=ON
enforce-gtid-consistency=ON
log-bin=binlog
log-replica-updates=ON
binlog-format=ROW
sync-binlog=1
innodb-flush-log-at-trx-commit=1
relay-log=relay-bin
relay-log-recovery=ON
replica-net-timeout=10
plugin-load-add=semisync_source.so
plugin-load-add=semisync_replica.so
loose-rpl-semi-sync-replica-enabled=ON
EOF
  fi
} > "$cnf"

# sql_str prints its argument as the body of a quoted SQL string.
sql_str() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e "s/'/\\\\'/g"; }
ask() {
  MYSQL_PWD="$MYSQL_ROOT_PASSWORD" "$client" --protocol=TCP -h "$DBC_PRIMARY_HOST" -P 3306 -uroot $tls \
    --connect-timeout=3 -N -s -e "$1"
}
# primary prints the pod that serves writes behind the client Service,
# when it is another one.
primary() {
  ask "SELECT @@hostname FROM DUAL WHERE @@GLOBAL.read_only = 0" 2>/dev/null | grep -vx "$POD_NAME" || true
}
persisted_on() { [ -f "$persisted" ] && grep -q "\"$1\": {\"Value\": \"ON\"" "$persisted"; }
# is_replica and is_fenced say what the data was when its server last ran:
# MySQL's in its persisted settings, MariaDB's (which has no SET PERSIST)
# in files of its data directory: master.info, which MariaDB keeps while
# it is a replica, and the marker the controller's fence writes.
fenced_marker="` + fencedMarker + `"
is_replica() {
  if [ "$dialect" = mariadb ]; then [ -e "$datadir/master.info" ]; else persisted_on read_only; fi
}
is_fenced() {
  if [ "$dialect" = mariadb ]; then [ -e "$fenced_marker" ]; else persisted_on super_read_only; fi
}

# start_temporary starts a temporary server of DIR (the data directory
# when empty) that listens on a socket only and starts no replication;
# further arguments are the server's. sql runs SQL as root on it, and
# stop_temporary stops it. Its log is kept in a file and copied to this
# container's once it stopped; a server that exits at start is reported
# with its own last errors (the termination message: the controller puts
# it in the Database's status). Nothing but this script uses the
# temporary server's socket and pid files: what a server killed earlier
# in the pod left of them is removed first (an empty socket lock file
# stops every later start).
tmp_sock="$run/dbc-temporary.sock"
tmp_log="$run/dbc-temporary.log"
tmp_args="--skip-replica-start --mysqlx=OFF"
[ "$dialect" = mysql ] || tmp_args=--skip-slave-start
start_temporary() {
  dir=$1
  shift
  rm -f "$tmp_sock" "$tmp_sock.lock" "$run/dbc-temporary.pid"
  "$server" --defaults-extra-file="$cnf" ${dir:+--datadir="$dir"} --socket="$tmp_sock" --pid-file="$run/dbc-temporary.pid" \
    --skip-networking $tmp_args "$@" >"$tmp_log" 2>&1 &
  tmp_pid=$!
  until "$admin" --socket="$tmp_sock" ping >/dev/null 2>&1; do
    if ! kill -0 "$tmp_pid" 2>/dev/null; then
      cat "$tmp_log" >&2
      fail "a temporary server of $POD_NAME's data exited: $(grep -E '\[ERROR\]' "$tmp_log" | tail -n 3 | sed -e 's/^.*\[ERROR\] *//' | tr '\n' ' ')"
    fi
    sleep 0.3
  done
}
sql() { "$client" --socket="$tmp_sock" -uroot -N -s -e "$1"; }
stop_temporary() {
  "$admin" --socket="$tmp_sock" -uroot shutdown >/dev/null || kill "$tmp_pid"
  wait "$tmp_pid" || true
  cat "$tmp_log" >&2
}

# follow makes the data a replica of the primary behind the client
# Service. It returns 2, and leaves the data as it is, when the data
# holds transactions the primary does not: $extra is their GTID set. It
# returns 3 when the primary no longer has in its binary logs (purged)
# transactions the data lacks, so that replication cannot bring them:
# $missing is their GTID set.
follow() {
  host=$(sql_str "$DBC_PRIMARY_HOST") pw=$(sql_str "$MYSQL_ROOT_PASSWORD")
  export MYSQL_PWD="$MYSQL_ROOT_PASSWORD"
  start_temporary ""
  mine=$(sql "SELECT REPLACE(@@GLOBAL.gtid_executed, '\n', '')") ||
    { stop_temporary; fail "$POD_NAME could not be made a replica: root@localhost does not log in with the Secret's password"; }
  extra=
  if [ -n "$mine" ]; then
    extra=$(ask "SELECT REPLACE(GTID_SUBTRACT('$(sql_str "$mine")', @@GLOBAL.gtid_executed), '\n', '')") ||
      { stop_temporary; unset MYSQL_PWD; return 1; }
  fi
  if [ -n "$extra" ]; then
    stop_temporary; unset MYSQL_PWD; return 2
  fi
  missing=$(ask "SELECT REPLACE(GTID_SUBTRACT(@@GLOBAL.gtid_purged, '$(sql_str "$mine")'), '\n', '')") ||
    { stop_temporary; unset MYSQL_PWD; return 1; }
  if [ -n "$missing" ]; then
    stop_temporary; unset MYSQL_PWD; return 3
  fi
  sql "CHANGE REPLICATION SOURCE TO SOURCE_HOST='$host', SOURCE_PORT=3306,
      SOURCE_USER='root', SOURCE_PASSWORD='$pw', SOURCE_AUTO_POSITION=1, SOURCE_SSL=1, $source_tls, GET_SOURCE_PUBLIC_KEY=1,
      SOURCE_CONNECT_RETRY=1, SOURCE_RETRY_COUNT=86400, SOURCE_HEARTBEAT_PERIOD=2;
    SET PERSIST read_only = ON;
    SET PERSIST super_read_only = ON;" ||
    { stop_temporary; fail "$POD_NAME could not be made a replica: the server refused"; }
  stop_temporary
  unset MYSQL_PWD
}

# follow_mariadb is follow for MariaDB, which has no GTID set arithmetic:
# the temporary server asks the primary for its changes from the data's
# own position (MASTER_USE_GTID=current_pos, what it wrote or applied
# last), and the primary, in gtid_strict_mode, refuses a position that is
# not in its binary log (error 1236): the data diverged (2), or, if the
# primary says so, what it lacks was purged (3). $extra and $missing say
# it in the primary's words. Once the primary sends, the data is its
# replica (master.info: its server starts read-only), and no longer fenced.
follow_mariadb() {
  host=$(sql_str "$DBC_PRIMARY_HOST") pw=$(sql_str "$MYSQL_ROOT_PASSWORD")
  export MYSQL_PWD="$MYSQL_ROOT_PASSWORD"
  start_temporary ""
  mine=$(sql "SELECT @@GLOBAL.gtid_current_pos") ||
    { stop_temporary; fail "$POD_NAME could not be made a replica: root@localhost does not log in with the Secret's password"; }
  sql "STOP REPLICA; RESET REPLICA ALL;
    CHANGE MASTER TO MASTER_HOST='$host', MASTER_PORT=3306, MASTER_USER='root', MASTER_PASSWORD='$pw', $master_tls
      MASTER_USE_GTID=current_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=2;
    START REPLICA IO_THREAD" ||
    { stop_temporary; fail "$POD_NAME could not be made a replica: the server refused"; }
  rc=1 n=0
  while [ "$n" -lt 50 ]; do
    # (Vertical, with the names: sql's -N would drop them.)
    st=$("$client" --socket="$tmp_sock" -uroot -e "SHOW REPLICA STATUS\G") || break
    errno=$(printf '%s\n' "$st" | sed -n 's/^ *Last_IO_Errno: //p')
    if [ "$errno" = 1236 ]; then
      why=$(printf '%s\n' "$st" | sed -n 's/^ *Last_IO_Error: //p')
      case "$why" in
        *purged*) missing="from $mine: $why" rc=3 ;;
        *) extra="its position $mine is not in the primary's binary log: $why" rc=2 ;;
      esac
      break
    fi
    # The primary's first event names its binary log: it sends.
    if [ -n "$(printf '%s\n' "$st" | sed -n 's/^ *Master_Log_File: //p')" ] &&
      printf '%s\n' "$st" | grep -q '^ *Slave_IO_Running: Yes'; then
      rc=0; break
    fi
    sleep 0.3; n=$((n + 1))
  done
  [ "$n" -lt 50 ] || say "the primary did not send within 15 s: $(printf '%s\n' "$st" | grep -E '^ *(Slave_IO_Running|Last_IO_Error):' | tr -s ' \n' ' ')"
  sql "STOP REPLICA" || rc=1
  if [ "$rc" -ne 0 ]; then
    sql "RESET REPLICA ALL" || true
  else
    rm -f "$fenced_marker"
  fi
  stop_temporary
  unset MYSQL_PWD
  return "$rc"
}

# seed_mariadb copies the primary's data into the empty data directory:
# a logical dump (mariadb-dump: consistent, with the primary's GTID
# position, and its accounts as CREATE OR REPLACE USER and GRANT) loaded,
# outside the binary log, into a new server in $datadir/dbc-clone, whose
# own accounts are dropped first (the copy has the primary's, and only
# those) and whose binary log starts at that position (a replica promoted
# before it applied anything goes on numbering from there); made a replica
# of the primary from that position, then moved into place. The load runs
# as a loading account of its own (dropped at the end): the dump replaces
# root's. MariaDB's own physical copy, mariadb-backup, reads the primary's
# files, which only its pod has.
seed_mariadb() {
  seed="$datadir/dbc-clone"
  rm -rf "$seed"
  mkdir "$seed"
  mariadb-install-db --datadir="$seed" --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve >/dev/null ||
    { rm -rf "$seed"; return 1; }
  host=$(sql_str "$DBC_PRIMARY_HOST") pw=$(sql_str "$MYSQL_ROOT_PASSWORD")
  start_temporary "$seed"
  ok=0
  load() { "$client" --socket="$tmp_sock" -udbc_seed "$@"; }
  sql "SET SESSION sql_log_bin = 0; CREATE USER dbc_seed@localhost;
    GRANT ALL ON *.* TO dbc_seed@localhost WITH GRANT OPTION; GRANT PROXY ON ''@'%' TO dbc_seed@localhost WITH GRANT OPTION" || ok=1
  [ "$ok" -ne 0 ] || echo "SET SESSION sql_log_bin = 0; $(load -N -s -e "SELECT CONCAT('DROP USER ', QUOTE(User), '@', QUOTE(Host), ';')
    FROM mysql.user WHERE NOT (User = 'dbc_seed' AND Host = 'localhost')")" | load || ok=1
  [ "$ok" -ne 0 ] || {
    echo "SET SESSION sql_log_bin = 0;"
    MYSQL_PWD="$MYSQL_ROOT_PASSWORD" mariadb-dump --protocol=TCP -h "$DBC_PRIMARY_HOST" -P 3306 -uroot $tls \
      --all-databases --ignore-database=mysql --system=users --replace --single-transaction --gtid --master-data=1 \
      --routines --events --triggers || echo "the dump failed;"
  } | load || ok=1
  # (SET GLOBAL gtid_binlog_state = @@GLOBAL.gtid_slave_pos hangs the
  # server: the position is read first.)
  pos=
  [ "$ok" -ne 0 ] || pos=$(load -N -s -e "SELECT @@GLOBAL.gtid_slave_pos") || ok=1
  [ "$ok" -ne 0 ] || [ -z "$pos" ] || load -e "SET SESSION sql_log_bin = 0; RESET MASTER; SET GLOBAL gtid_binlog_state = '$(sql_str "$pos")'" || ok=1
  [ "$ok" -ne 0 ] || load -e "SET SESSION sql_log_bin = 0; FLUSH PRIVILEGES;
    CHANGE MASTER TO MASTER_HOST='$host', MASTER_PORT=3306, MASTER_USER='root', MASTER_PASSWORD='$pw', $master_tls
      MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_HEARTBEAT_PERIOD=2;
    DROP USER dbc_seed@localhost" || ok=1
  if [ "$ok" -ne 0 ]; then
    # The loading account may be gone: the server is stopped without it.
    kill "$tmp_pid"; wait "$tmp_pid" || true
    rm -rf "$seed"; return 1
  fi
  MYSQL_PWD="$MYSQL_ROOT_PASSWORD" stop_temporary
  say "seeded at the primary's position $pos"
  find "$seed" -mindepth 1 -maxdepth 1 -exec mv -t "$datadir" {} +
  rmdir "$seed"
}

# set_aside keeps the binary logs of data that diverged from the primary,
# as dbc-diverged-<time>-binlog.<n> in the data directory (the server
# ignores them: mysqlbinlog --include-gtids reads the discarded
# transactions back), and removes the rest of the data.
set_aside() {
  stamp=$(date -u +%Y%m%dT%H%M%SZ)
  for f in "$datadir"/binlog.[0-9]*; do
    [ ! -e "$f" ] || mv "$f" "$datadir/dbc-diverged-$stamp-${f##*/}"
  done
  find "$datadir" -mindepth 1 -maxdepth 1 ! -name 'dbc-diverged-*' -exec rm -rf {} +
}

# prepare_primary makes the primary able to give a clone and to be
# replicated by GTID, as a primary that served alone before the Database
# was scaled up may not be: the clone plugin (installed, so kept), then
# GTIDs switched on online, in MySQL's steps, persisted. Neither is
# written to the binary log.
prepare_primary() {
  [ "$(ask "SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'clone'")" = 1 ] ||
    ask "SET SESSION sql_log_bin = 0; INSTALL PLUGIN clone SONAME 'mysql_clone.so'" || return 1
  mode=$(ask "SELECT @@GLOBAL.gtid_mode") || return 1
  [ "$mode" != ON ] || return 0
  say "switching GTIDs on at the primary (gtid_mode was $mode)"
  ask "SET PERSIST enforce_gtid_consistency = ON" || return 1
  [ "$mode" != OFF ] || ask "SET PERSIST gtid_mode = OFF_PERMISSIVE" || return 1
  [ "$mode" = ON_PERMISSIVE ] || ask "SET PERSIST gtid_mode = ON_PERMISSIVE" || return 1
  n=0
  until [ "$(ask "SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Ongoing_anonymous_transaction_count'")" = 0 ]; do
    n=$((n + 1)); [ "$n" -lt 60 ] || return 1
    sleep 1
  done
  ask "SET PERSIST gtid_mode = ON"
}

# clone copies the primary's data into the empty data directory, through
# a temporary server of its own in $datadir/dbc-seed.
clone() {
  prepare_primary || return 1
  seed="$datadir/dbc-seed"
  rm -rf "$seed" "$datadir/dbc-clone"
  "$server" --defaults-extra-file="$cnf" --datadir="$seed" --initialize-insecure
  host=$(sql_str "$DBC_PRIMARY_HOST") pw=$(sql_str "$MYSQL_ROOT_PASSWORD")
  ok=0
  start_temporary "$seed" --plugin-load-add=mysql_clone.so
  # With TLS the clone verifies the donor against the authorities.
  clone_tls=
  [ -z "$tls" ] || clone_tls="SET GLOBAL clone_ssl_ca = '$(sql_str "$DBC_TLS_CA")';"
  sql "SET GLOBAL clone_valid_donor_list = '$host:3306'; $clone_tls
    CLONE INSTANCE FROM 'root'@'$host':3306 IDENTIFIED BY '$pw' DATA DIRECTORY = '$datadir/dbc-clone'${clone_tls:+ REQUIRE SSL}" || ok=$?
  stop_temporary
  rm -rf "$seed"
  [ "$ok" -eq 0 ] || { rm -rf "$datadir/dbc-clone"; return 1; }
  find "$datadir/dbc-clone" -mindepth 1 -maxdepth 1 -exec mv -t "$datadir" {} +
  rmdir "$datadir/dbc-clone"
}

waited=0
while :; do
  if [ -d "$datadir/dbc-clone" ]; then
    # A clone cut short, or its move into place: everything here came
    # from it.
    say "removing an unfinished clone"
    find "$datadir" -mindepth 1 -maxdepth 1 ! -name 'dbc-diverged-*' -exec rm -rf {} +
  fi
  p=$(primary)
  if [ ! -d "$datadir/mysql" ]; then
    if [ -n "$p" ] && [ "$dialect" = mariadb ]; then
      say "seeding from a dump of $p"
      if seed_mariadb; then
        say "seeded; starting as a replica of $p"; exit 0
      fi
      say "the seed from $p failed; trying again"
    elif [ -n "$p" ]; then
      say "cloning from $p"
      if clone; then
        follow || fail "$POD_NAME, cloned from $p, could not be made its replica"
        say "cloned; starting as a replica of $p"; exit 0
      fi
      say "the clone from $p failed; trying again"
    else
      case "$POD_NAME" in
        *-0) say "no primary answers: the entrypoint initialises new data"; exit 0 ;;
      esac
    fi
  elif [ -n "$p" ]; then
    rc=0
    if [ "$dialect" = mariadb ]; then follow_mariadb || rc=$?; else follow || rc=$?; fi
    case "$rc" in
      0) say "$p is the primary: starting as its replica"; exit 0 ;;
      2)
        # The controller reports this line (the termination message).
        echo "diverged: $POD_NAME held transactions $p does not ($extra); its binary logs are kept in its volume as dbc-diverged-*, and it is cloned again from $p" |
          tee /dev/termination-log
        set_aside ;;
      3)
        # Nothing is lost: the primary has every transaction the data
        # holds (no divergence, above), and more.
        say "$p purged from its binary logs transactions $POD_NAME lacks ($missing): its data is cloned again from $p"
        find "$datadir" -mindepth 1 -maxdepth 1 ! -name 'dbc-diverged-*' -exec rm -rf {} + ;;
      *) say "could not compare its transactions with $p's; trying again" ;;
    esac
  elif is_replica; then
    say "no primary answers: starting as the replica it was"; exit 0
  elif ! is_fenced; then
    say "no other primary answers: starting as it was"; exit 0
  fi
  if [ "$waited" -ge 600 ]; then
    fail "no primary answered through $DBC_PRIMARY_HOST for 10 minutes"
  fi
  [ $((waited % 30)) -ne 0 ] || say "waiting for a primary to answer through $DBC_PRIMARY_HOST"
  sleep 2; waited=$((waited + 2))
done
`

package postgresql

import "github.com/dbcontroller/database-controller/pkg/engine"

// dataRoot is where the data volume is mounted: PGDATA is a directory
// below it, and the replication's own files sit beside PGDATA, so that
// neither pg_basebackup nor pg_rewind copies them.
const dataRoot = "/var/lib/postgresql/data"

// FenceMarker is the file the controller writes, over SQL (COPY ... TO,
// package pgsql's Fence), on a primary it takes the role from. The init script reads it at the
// next start: that server rejoins as a replica, and never starts as a
// primary again.
const FenceMarker = dataRoot + "/dbc-fenced"

// replication is PostgreSQL streaming replication on the official image.
var replication = engine.Replication{
	// wal_log_hints lets pg_rewind rejoin a former primary (PG 14 to 17 do
	// not enable data checksums); wal_keep_size keeps the WAL that a
	// rejoining former primary or a reconnecting replica needs; and
	// hot_standby_feedback keeps the primary from vacuuming away rows that
	// a long query on a replica (a backup's pg_dump) still reads, which
	// would otherwise cancel it; cluster_name, last, is how a pod recognises
	// itself behind the client Service. hot_standby is on by default, so
	// replicas serve reads.
	ServerArgs: []string{"postgres",
		"-c", "wal_log_hints=on",
		"-c", "wal_keep_size=256MB",
		"-c", "hot_standby_feedback=on",
		"-c", "cluster_name=$(POD_NAME)"},
	InitScript: initScript,
	// A walsender ends at shutdown only once it sent all the WAL, the
	// shutdown checkpoint included, and its standby flushed it.
	ShutdownSendsAll: true,
}

// initScript runs before every start of a replicated PostgreSQL server.
// The client Service routes only to the pod the controller labelled
// primary, so asking it "who serves out of recovery?" is asking the
// controller's decision, with no API access from the pod.
//
//   - No data: clone it from the primary (pg_basebackup into a scratch
//     directory, moved into place once complete). With no primary to clone
//     from, ordinal 0 initialises a new cluster (the entrypoint's initdb),
//     and any other ordinal waits.
//   - A replica's data: start as a replica, streaming through the client
//     Service, so that it follows a new primary by itself; but first, if
//     the primary writes another timeline than the data's, pg_rewind it
//     (which does nothing unless it applied WAL of its timeline past the
//     point where the primary's history left it: it diverged, and could
//     never follow; the controller restarts such a replica).
//   - A former primary's data, while another pod is the primary, or after
//     the controller fenced it: rewind it to the primary's timeline
//     (pg_rewind discards its divergent writes), or clone it again if that
//     fails, and start as a replica. Fenced with no primary yet: wait.
//   - Otherwise (a primary restarted): start as it was.
//   - Data of another major version than the server's (a replica after its
//     primary's data was upgraded in place): it cannot follow the primary,
//     so it is seeded again from it, once a primary answers; never on a
//     pod that would start as the primary.
//
// The replication connection authenticates as the superuser with a
// passfile beside PGDATA, rewritten at every start so that a rotated
// password takes effect at the next restart; with TLS, it verifies the
// primary's certificate (DBC_REPLICATION_TLS, from engine.TLS).
const initScript = `set -eu
root=$(dirname "$PGDATA")
say() { echo "replication: $*"; }
umask 077
esc() { printf '%s' "$1" | sed 's/[\\:]/\\&/g'; }
passfile="$root/dbc-replication.pgpass"
printf '*:*:*:%s:%s\n' "$(esc "$POSTGRES_USER")" "$(esc "$POSTGRES_PASSWORD")" > "$passfile"
export PGPASSFILE="$passfile" PGCONNECT_TIMEOUT=3
conninfo="host=$DBC_PRIMARY_HOST port=5432 user=$POSTGRES_USER passfile=$passfile application_name=$POD_NAME${DBC_REPLICATION_TLS:+ $DBC_REPLICATION_TLS}"
` + hbaLine + `
fenced="` + FenceMarker + `"

# The first init (the entrypoint's, on ordinal 0) allows replication connections.
` + firstInitAllowsReplication + `

primary() {
  psql -X -w -d "host=$DBC_PRIMARY_HOST port=5432 user=$POSTGRES_USER dbname=postgres" -tAc \
    "SELECT current_setting('cluster_name') WHERE NOT pg_is_in_recovery()" 2>/dev/null | grep -vx "$POD_NAME" || true
}
follow() {
  touch "$PGDATA/standby.signal"
  sed -i -e '/^primary_conninfo/d' -e '/^default_transaction_read_only/d' "$PGDATA/postgresql.auto.conf"
  printf "primary_conninfo = '%s'\n" "$conninfo" >> "$PGDATA/postgresql.auto.conf"
  rm -f "$fenced"
}
timeline_of_primary() {
  psql -X -w -d "$conninfo dbname=postgres" -tAc "SELECT ('x' || left(pg_walfile_name(pg_current_wal_lsn()), 8))::bit(32)::int" 2>/dev/null || true
}
# The data's timeline, when it was shut down cleanly (pg_rewind needs it;
# a replica that crashed starts as it is, and the controller restarts it
# if it cannot follow).
timeline_of_data() {
  LC_ALL=C pg_controldata -D "$PGDATA" | awk -F: '/^Database cluster state: *shut down/ { clean = 1 }
    /^Latest checkpoint.s TimeLineID|^Min recovery ending loc.s timeline/ { if ($2 + 0 > t) t = $2 + 0 }
    END { if (clean) print t + 0 }'
}
rewind() {
  # A just-promoted primary names its new timeline only after a checkpoint.
  psql -X -w -d "$conninfo dbname=postgres" -qc CHECKPOINT || true
  if pg_rewind -D "$PGDATA" --source-server="$conninfo dbname=postgres"; then
    follow; say "rewound; starting as a replica"; exit 0
  fi
  say "pg_rewind failed: cloning again from $p"; clone; say "cloned; starting as a replica"; exit 0
}
clone() {
  rm -rf "$PGDATA.clone"
  pg_basebackup -d "$conninfo" -D "$PGDATA.clone" -X stream -c fast
  rm -rf "$PGDATA"
  mv "$PGDATA.clone" "$PGDATA"
  follow
}
` + allowReplication + `

server=$(postgres -V | awk '{ print $3 }')
server=${server%%.*}
waited=0
while :; do
  p=$(primary)
  if [ -s "$PGDATA/PG_VERSION" ] && [ "$(cat "$PGDATA/PG_VERSION")" != "$server" ]; then
    if [ -n "$p" ]; then
      say "the data is PostgreSQL $(cat "$PGDATA/PG_VERSION")'s, which the server of $server cannot follow: discarding it, and cloning again from $p"
      clone; say "cloned; starting as a replica"; exit 0
    fi
  elif [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -n "$p" ]; then say "cloning from $p"; clone; say "cloned; starting as a replica"; exit 0; fi
    case "$POD_NAME" in
      *-0) if [ ! -f "$fenced" ]; then say "no primary answers: the entrypoint initialises a new cluster"; exit 0; fi ;;
    esac
  else
    allow_replication
    if [ -f "$PGDATA/standby.signal" ]; then
      if [ -n "$p" ]; then
        theirs=$(timeline_of_primary); ours=$(timeline_of_data)
        if [ -n "$theirs" ] && [ -n "$ours" ] && [ "$theirs" != "$ours" ]; then
          say "$p writes timeline $theirs, this replica's data is of timeline $ours: rewinding it, in case it applied WAL the primary's history does not have"
          rewind
        fi
      fi
      follow; say "starting as a replica"; exit 0
    fi
    if [ -n "$p" ]; then say "$p is the primary: rewinding this former primary"; rewind; fi
    if [ ! -f "$fenced" ]; then say "no other primary answers: starting as it was"; exit 0; fi
  fi
  if [ "$waited" -ge 600 ]; then
    echo "no primary answered through $DBC_PRIMARY_HOST for 10 minutes" | tee /dev/termination-log >&2
    exit 1
  fi
  [ $((waited % 30)) -ne 0 ] || say "waiting for a primary to answer through $DBC_PRIMARY_HOST"
  sleep 2; waited=$((waited + 2))
done
`

// The pg_hba.conf line that lets the superuser open replication
// connections, with a password, from any address (a replica's clone and
// pg_rewind, a base backup's pg_basebackup: the official image's
// pg_hba.conf allows them only from the pod itself); the function that
// adds it to the data's pg_hba.conf, once; and the line that writes the
// first-init script that adds it to the data the entrypoint initialises.
const (
	hbaLine          = `hba="host replication $POSTGRES_USER all scram-sha-256"`
	allowReplication = `allow_replication() {
  grep -qxF "$hba" "$PGDATA/pg_hba.conf" || printf '%s\n' "$hba" >> "$PGDATA/pg_hba.conf"
}`
	firstInitAllowsReplication = `printf 'printf "%%s\\n" "%s" >> "$PGDATA/pg_hba.conf"\n' "$hba" > "$DBC_INITDB_DIR/00-dbc-replication.sh"`
)

// archivingInitScript runs before every start of a PostgreSQL server that
// archives and is not replicated: it lets base backups in.
const archivingInitScript = `set -eu
` + hbaLine + `
` + allowReplication + `
if [ -s "$PGDATA/PG_VERSION" ]; then
  allow_replication
else
  ` + firstInitAllowsReplication + `
fi
`

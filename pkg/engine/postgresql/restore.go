package postgresql

// BaseRestoredMarker is the file, beside PGDATA, that the restore of a base
// backup (unlike a dump's, engine.RestoredMarker) writes once the data is recovered and is the Database's own:
// pg_basebackup never copies it, so the restore of a backup of a restored
// Database starts afresh.
const BaseRestoredMarker = dataRoot + "/dbc-restored"

// restoreScript is engine.Archiving.Restore for PostgreSQL. The server it
// recovers with listens on its socket only, with hot_standby off: nothing
// connects until the recovery ended, and then only this script, through
// the socket, which the image's pg_hba.conf trusts. Restarted part way,
// it recovers from where the data is (PostgreSQL resumes from its last
// restartpoint); fetched part way, it fetches again. Only the first pod
// restores: a replicated Database's others clone it (the replication's
// init container).
const restoreScript = `set -eu
say() { echo "restore: $*"; }
fail() { printf '%s\n' "$1" > /dev/termination-log; printf 'restore: %s\n' "$1" >&2; exit 1; }
` + fetchAndRecover + `
case "$(cat /proc/sys/kernel/hostname)" in
  *-0) ;;
  *) say "the first pod restores; this one starts from its data"; exit 0 ;;
esac
if [ -f ` + BaseRestoredMarker + ` ]; then say "restored already"; exit 0; fi
if [ ! -f "$PGDATA/recovery.signal" ]; then
  if [ -s "$PGDATA/PG_VERSION" ]; then
    fail "the data directory holds data that the restore of $DBC_RESTORE_BACKUP did not write; delete this pod's claim and the pod to restore again"
  fi
  fetch "$PGDATA.restore"
  rm -rf "$PGDATA"
  mv "$PGDATA.restore" "$PGDATA"
fi
say "recovering base backup $DBC_RESTORE_BACKUP to $DBC_RESTORE_TARGET_TEXT"
rm -f /tmp/recovery.log
pg_ctl -D "$PGDATA" -l /tmp/recovery.log -W -o "-c listen_addresses='' -c hot_standby=off -c archive_mode=off -c restore_command='$DBC_TOOLS objectstore wal-fetch %f %p' -c recovery_target_timeline=latest -c recovery_target_action=promote $DBC_RESTORE_TARGET" start
recovered /var/run/postgresql "$DBC_RESTORE_TARGET_TEXT"
cat /tmp/recovery.log
rm -f /tmp/recovery.log
say "recovered; the data takes this Database's credentials and database name"
psql -X -w -q -v ON_ERROR_STOP=1 -h /var/run/postgresql -U "$POSTGRES_USER" -d postgres \
  -v user="$POSTGRES_USER" -v password="$POSTGRES_PASSWORD" -v source="$DBC_RESTORE_SOURCE_DATABASE" -v target="$POSTGRES_DB" <<'SQL'
ALTER ROLE :"user" WITH PASSWORD :'password';
SELECT format('ALTER DATABASE %I RENAME TO %I', :'source', :'target')
WHERE :'source' <> :'target'
  AND EXISTS (SELECT FROM pg_database WHERE datname = :'source')
  AND NOT EXISTS (SELECT FROM pg_database WHERE datname = :'target') \gexec
SQL
pg_ctl -D "$PGDATA" -m fast -w stop
touch ` + BaseRestoredMarker + `
say "restored base backup $DBC_RESTORE_BACKUP to $DBC_RESTORE_TARGET_TEXT"
`

// fetchAndRecover are the shell functions restoreScript and verifyScript
// share. fetch DIR checks that the archive holds the WAL from the base
// backup's first segment on, and fetches and unpacks the backup into DIR,
// ready to recover. recovered SOCKETDIR TARGETTEXT waits for the server
// started on $PGDATA to end its recovery (the control file says "in
// archive recovery", then "in production" once promoted) and take
// connections on SOCKETDIR; it removes its postmaster.pid when it stops:
// when recovery fails, which fails with PostgreSQL's words.
const fetchAndRecover = `fetch() {
  say "checking that the archive holds the WAL from $DBC_RESTORE_FROM on"
  "$DBC_TOOLS" objectstore wal-check "$DBC_RESTORE_FROM" 2>/tmp/check.err ||
    fail "refused: the archive cannot restore base backup $DBC_RESTORE_BACKUP: $(tail -n 1 /tmp/check.err | sed 's/^controller objectstore wal-check: //')"
  say "fetching base backup $DBC_RESTORE_BACKUP"
  rm -rf "$1" /tmp/fetch.failed
  mkdir -m 700 "$1"
  { "$DBC_TOOLS" objectstore get "$DBC_RESTORE_KEY" 2>/tmp/fetch.err || touch /tmp/fetch.failed; } | tar -x -f - -C "$1" 2>/tmp/tar.err ||
    fail "could not unpack base backup $DBC_RESTORE_BACKUP: $(tail -n 1 /tmp/tar.err)"
  [ ! -f /tmp/fetch.failed ] || fail "could not fetch base backup $DBC_RESTORE_BACKUP: $(tail -n 1 /tmp/fetch.err)"
  touch "$1/recovery.signal"
}
recovered() {
  seen=0 waited=0
  until pg_controldata "$PGDATA" | grep -q '^Database cluster state: *in production$'; do running "$2"; done
  until pg_isready -q -h "$1"; do running "$2"; done
}
running() {
  if [ -f "$PGDATA/postmaster.pid" ]; then
    seen=1
  elif [ "$seen" = 1 ] || [ "$waited" -ge 60 ]; then
    cat /tmp/recovery.log >&2
    fail "recovery of base backup $DBC_RESTORE_BACKUP to $1 failed: $(grep -E 'FATAL|PANIC' /tmp/recovery.log | tail -n 1 | sed -E 's/^.*(FATAL|PANIC): *//')"
  fi
  sleep 1
  waited=$((waited + 1))
}`

// verifyScript is engine.Archiving.Verify for PostgreSQL: restoreScript's
// fetch and recovery into a directory of the Job's own, to the point the
// copy became consistent (recovery_target=immediate), on a socket in
// /tmp, and one question once it serves.
const verifyScript = `set -eu
say() { echo "verify: $*"; }
fail() { printf '%s\n' "$1" > /dev/termination-log; printf 'verify: %s\n' "$1" >&2; exit 1; }
` + fetchAndRecover + `
start=$(date +%s)
fetch "$PGDATA"
say "recovering base backup $DBC_RESTORE_BACKUP to its consistent point"
pg_ctl -D "$PGDATA" -l /tmp/recovery.log -W -o "-c listen_addresses='' -c unix_socket_directories=/tmp -c hot_standby=off -c archive_mode=off -c restore_command='$DBC_TOOLS objectstore wal-fetch %f %p' -c recovery_target=immediate -c recovery_target_action=promote" start
recovered /tmp "its consistent point"
cat /tmp/recovery.log
databases=$(psql -X -w -At -v ON_ERROR_STOP=1 -h /tmp -U "$USERNAME" -d postgres -c "SELECT count(*) FROM pg_database WHERE NOT datistemplate" 2>&1) ||
  fail "base backup $DBC_RESTORE_BACKUP recovered, and its server did not answer: $databases"
pg_ctl -D "$PGDATA" -m immediate -w stop >/dev/null
msg="restorable: recovered to its consistent point and served ($databases databases) in $(( $(date +%s) - start )) s"
say "$msg"
printf '%s\n' "$msg" > /dev/termination-log
`

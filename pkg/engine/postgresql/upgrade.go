package postgresql

import (
	"strings"

	"github.com/dbcontroller/database-controller/pkg/engine"
)

// majorUpgrade moves a data directory to a newer major version with
// pg_upgrade. An image holds one major version only, so the old version's
// programs come from its own image: copyOldPrograms copies them, with the
// shared libraries they load but the C library's own (the new image's C
// library is newer, and runs them), and wraps each in a script that points
// the loader at those libraries, so that the new version's programs never
// see them. pg_upgrade runs in link mode: no second copy of the data, and
// until it has linked the files the old data is untouched but for the name
// of global/pg_control, which the script puts back when it fails.
var majorUpgrade = engine.MajorUpgrade{
	Needed: func(from, to string) bool {
		f, t := engine.Series(from, 1), engine.Series(to, 1)
		return f != "" && t != "" && f != t
	},
	Copy:    strings.ReplaceAll(copyOldPrograms, "/dbc-upgrade", engine.MajorUpgradeDir),
	Upgrade: strings.ReplaceAll(upgradeData, "/dbc-upgrade", engine.MajorUpgradeDir),
	After:   rebuildStatistics,
}

// copyOldPrograms runs in the image of the version upgraded from. JIT's
// library (and its bitcode) is left out: it loads LLVM, a library of over
// 100 MB, and a server without it runs every query without JIT.
const copyOldPrograms = `set -eu
out=/dbc-upgrade
server=$(command -v postgres) || { echo "no postgres on PATH in the image of the version upgraded from" >&2; exit 1; }
home=$(dirname "$(dirname "$server")")
major=${home##*/}
share=/usr/share/postgresql/$major
rm -rf "$out/old" "$out/bin"
mkdir -p "$out/old$home" "$out/old$share" "$out/old/lib" "$out/bin"
cp -a "$home/." "$out/old$home/"
cp -a "$share/." "$out/old$share/"
rm -rf "$out/old$home/lib/bitcode" "$out/old$home/lib/llvmjit"*
for f in "$out/old$home"/bin/* "$out/old$home"/lib/*.so; do ldd "$f" 2>/dev/null || true; done |
  awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u | while read -r lib; do
  case "${lib##*/}" in
    ld-linux*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libresolv.so.*|libutil.so.*|libanl.so.*|libmvec.so.*) ;;
    *) cp -L "$lib" "$out/old/lib/" ;;
  esac
done
for f in "$out/old$home"/bin/*; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$out/old/lib" "$f" > "$out/bin/${f##*/}"
  chmod 0755 "$out/bin/${f##*/}"
done
echo "$major" > "$out/major"
echo "copied PostgreSQL $major's programs and $(ls "$out/old/lib" | wc -l) libraries"
`

// upgradeData runs in the image of the version upgraded to, on the data
// volume, with PGDATA, POSTGRES_USER and POSTGRES_PASSWORD. pg_upgrade
// needs a cleanly shut down old cluster: one that was not (a killed pod)
// recovers with the old version first. The new data directory is made
// beside PGDATA with the old one's checksum setting, and swapped in once
// pg_upgrade succeeded; a marker beside them lets a run cut short in the
// swap finish it. The configuration files go with the data, but for the
// settings the new version does not know.
const upgradeData = `set -eu
old=/dbc-upgrade
say() { echo "upgrade: $*"; }
fail() { echo "upgrade: $*" >&2; printf '%s' "$*" | head -c 3800 > /dev/termination-log; exit 1; }
[ -s "$old/major" ] || fail "the programs of the version upgraded from were not copied"
from=$(cat "$old/major")
version=$(postgres -V | awk '{ print $3 }')
to=${version%%.*}
new=$PGDATA.upgrade
marker=$(dirname "$PGDATA")/upgrade-$to.done
# A swap cut short: pg_upgrade had succeeded, and the new data is whole.
if [ -f "$marker" ]; then
  if [ -d "$new" ]; then
    if [ -d "$PGDATA" ]; then mv "$PGDATA" "$PGDATA.$from"; fi
    mv "$new" "$PGDATA"
  fi
  rm -rf "$PGDATA.$from"
  rm -f "$marker"
fi
[ -s "$PGDATA/PG_VERSION" ] || fail "there is no data directory at $PGDATA"
have=$(cat "$PGDATA/PG_VERSION")
if [ "$have" = "$to" ]; then say "the data is PostgreSQL $to's already"; exit 0; fi
[ "$have" = "$from" ] || fail "the data directory is PostgreSQL $have's, not $from's"
# An upgrade cut short before its end left the old data as it was, but for
# pg_control's name in link mode (pg_upgrade's documentation says so).
rm -rf "$new"
if [ ! -f "$PGDATA/global/pg_control" ] && [ -f "$PGDATA/global/pg_control.old" ]; then
  mv "$PGDATA/global/pg_control.old" "$PGDATA/global/pg_control"
fi
cd /tmp
state=$("$old/bin/pg_controldata" "$PGDATA" | sed -n 's/^Database cluster state: *//p')
if [ "$state" != "shut down" ]; then
  say "PostgreSQL $from's data was not shut down cleanly ($state): recovering it with PostgreSQL $from first"
  "$old/bin/pg_ctl" -D "$PGDATA" -w -t 86400 -l /tmp/recovery.log -o "-c listen_addresses='' -c unix_socket_directories=/tmp" start ||
    fail "PostgreSQL $from could not recover its data: $(tail -n 5 /tmp/recovery.log | tr '\n' ' ')"
  "$old/bin/pg_ctl" -D "$PGDATA" -w -m fast stop
fi
checksums=--no-data-checksums
if [ "$("$old/bin/pg_controldata" "$PGDATA" | sed -n 's/^Data page checksum version: *//p')" != 0 ]; then checksums=--data-checksums; fi
if [ "$to" -lt 18 ] && [ "$checksums" = --no-data-checksums ]; then checksums=; fi
printf '%s\n' "$POSTGRES_PASSWORD" > /tmp/pwfile
# shellcheck disable=SC2086
initdb -D "$new" --username="$POSTGRES_USER" --pwfile=/tmp/pwfile $checksums > /tmp/initdb.log 2>&1 ||
  fail "initdb of PostgreSQL $to failed: $(tail -n 5 /tmp/initdb.log | tr '\n' ' ')"
rm -f /tmp/pwfile
say "upgrading PostgreSQL $from's data to $to with pg_upgrade --link"
export PGPASSWORD="$POSTGRES_PASSWORD"
if ! pg_upgrade --old-bindir="$old/bin" --new-bindir="$(dirname "$(command -v postgres)")" --old-datadir="$PGDATA" \
  --new-datadir="$new" --username="$POSTGRES_USER" --socketdir=/tmp --link > /tmp/pg_upgrade.log 2>&1; then
  cat /tmp/pg_upgrade.log
  words=$(grep -v -e '^ *$' -e '^Performing' -e '^-*$' -e ' ok$' -e '^A list of' -e 'pg_upgrade_output.d' /tmp/pg_upgrade.log | tail -n 12 | tr -s ' \n' ' ')
  for f in $(grep -o '/[^ ]*\.txt' /tmp/pg_upgrade.log | sort -u); do
    [ -f "$f" ] && words="$words; ${f##*/}: $(head -n 5 "$f" | tr -s ' \n' ' ')"
  done
  rm -rf "$new"
  if [ ! -f "$PGDATA/global/pg_control" ] && [ -f "$PGDATA/global/pg_control.old" ]; then
    mv "$PGDATA/global/pg_control.old" "$PGDATA/global/pg_control"
  fi
  fail "pg_upgrade from PostgreSQL $from to $to failed, and PostgreSQL $from's data is as it was: $words"
fi
cat /tmp/pg_upgrade.log
# The configuration goes with the data: pg_hba.conf and pg_ident.conf as
# they were, and of postgresql.conf and postgresql.auto.conf the settings
# PostgreSQL $to knows (one it does not would stop it starting).
postgres --describe-config | cut -f1 > /tmp/known
keep() {
  awk -v to="$to" 'NR == FNR { known[$1] = 1; next }
    { line = $0; sub(/^[ \t]+/, "", line); if (line == "" || line ~ /^#/) next
      name = tolower(line); sub(/[ \t=].*/, "", name)
      if (known[name] || index(name, ".") || name ~ /^include/) print; else print "# not known to PostgreSQL " to ", left out by the upgrade: " $0 }' /tmp/known "$1"
}
keep "$PGDATA/postgresql.conf" >> "$new/postgresql.conf"
if [ -f "$PGDATA/postgresql.auto.conf" ]; then
  { echo '# Do not edit this file manually!'; echo '# It will be overwritten by the ALTER SYSTEM command.'; keep "$PGDATA/postgresql.auto.conf"; } > "$new/postgresql.auto.conf"
fi
cp "$PGDATA/pg_hba.conf" "$PGDATA/pg_ident.conf" "$new/"
touch "$marker"
mv "$PGDATA" "$PGDATA.$from"
mv "$new" "$PGDATA"
rm -rf "$PGDATA.$from"
rm -f "$marker"
say "PostgreSQL $from's data is PostgreSQL $to's now"
`

// rebuildStatistics runs once the new version serves: pg_upgrade carries
// no planner statistics before PostgreSQL 18, which carries most of them
// (then only the missing ones are gathered). In stages, so that the
// planner has rough statistics soon.
const rebuildStatistics = `set -eu
export PGPASSWORD="$PASSWORD"
major=$(psql -X -w -h "$HOST" -p "$PORT" -U "$USERNAME" -d "$DATABASE" -Atc 'SHOW server_version_num')
major=$((major / 10000))
missing=
if [ "$major" -ge 18 ]; then missing=--missing-stats-only; fi
# shellcheck disable=SC2086
vacuumdb -w -h "$HOST" -p "$PORT" -U "$USERNAME" --maintenance-db="$DATABASE" --all --analyze-in-stages $missing
`

#!/usr/bin/env bash
# Builds the real node's images into _output/images as OCI archives that
# `ctr images import` reads (hack/lib/node.sh imports them):
#   pause.tar       the pause binary (hack/tools/build.sh pause) alone
#   controller.tar  the controller's binary alone (hack/build.sh), as the
#                   Dockerfile's image has it: its pods' init containers copy
#                   it in (controller install-tools) to reach the object store
#   postgresql.tar  Debian's postgresql-15 with hack/images/postgresql/docker-entrypoint.sh
#   postgresql17.tar
#                   the same of Debian trixie's postgresql-17: a second major, for the
#                   in-place major upgrade (pg_upgrade 15 -> 17)
#   postgresql-slowinit.tar
#                   postgresql.tar's layer and one more with a first-init script
#                   slower than the liveness budget (hack/images/postgresql/slow-init.sh),
#                   for test/e2e/realnode
#   mariadb.tar     Debian's mariadb-server with hack/images/mariadb/docker-entrypoint.sh
#                   (both MySQL-protocol images source hack/images/mysql-init.sh)
#   mariadb118.tar  the same of Debian trixie's MariaDB 11.8: a second series, for
#                   the in-place series upgrade (10.11 -> 11.8)
#   mysql.tar       Debian sid's mysql-server-core (Oracle's MySQL 9.7) with
#                   hack/images/mysql/docker-entrypoint.sh and mysqld.cnf
#   postgres-exporter.tar, mysqld-exporter.tar
#                   Debian trixie's prometheus-postgres-exporter (0.17.1) and
#                   prometheus-mysqld-exporter (0.17.2), the versions of the
#                   upstream images the controller runs by default
#                   (spec.monitoring): one root filesystem with both, each
#                   image's entrypoint its exporter
# The Debian root filesystems are made with mmdebstrap (--mode=root
# --variant=minbase) from Debian's mirror. Each image is rebuilt only when a
# stamp of its inputs changes: the suite, the mirror, the package list, the
# files copied in, the image config and ociarchive.
#
# Usage: hack/images/build.sh [IMAGE...]   (pause controller postgresql postgresql-slowinit postgresql17 mariadb mariadb118 mysql
#   postgres-exporter mysqld-exporter; default all)
# Environment: DEBIAN_SUITE [bookworm], MYSQL_SUITE [sid], PG17_SUITE [trixie], MARIADB118_SUITE [trixie],
#   EXPORTERS_SUITE [trixie], DEBIAN_MIRROR [http://deb.debian.org/debian],
#   BIN_DIR [_output/bin], IMAGES_DIR [_output/images]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/hack/images"
BIN="${BIN_DIR:-$ROOT/_output/bin}"
OUT="${IMAGES_DIR:-$ROOT/_output/images}"
SUITE=${DEBIAN_SUITE:-bookworm}
# Oracle's MySQL is in Debian's unstable suite only.
MYSQL_SUITE=${MYSQL_SUITE:-sid}
# PostgreSQL 17 is in Debian's trixie suite.
PG17_SUITE=${PG17_SUITE:-trixie}
# MariaDB 11.8 is in Debian's trixie suite.
MARIADB118_SUITE=${MARIADB118_SUITE:-trixie}
# The exporters of the upstream images' versions are in Debian's trixie suite.
EXPORTERS_SUITE=${EXPORTERS_SUITE:-trixie}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# shellcheck source=names.sh
source "$HERE/names.sh"
# shellcheck source=hack/lib/build-cache.sh
source "$ROOT/hack/lib/build-cache.sh"
mkdir -p "$OUT"

log() { printf '[build-images %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

for b in ociarchive pause; do
  [[ -x "$BIN/$b" ]] || { echo "build-images: $BIN/$b is missing: run hack/tools/build.sh node-tools pause" >&2; exit 1; }
done

# Keep the images small: no documentation, manual pages or translations.
DPKG_EXCLUDES=(--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/locale/*')

# The customize hooks run on the host with the root filesystem in $1. They
# give the server's user uid and gid 999 (what the controller's pods run
# as), drop the cluster or data directory the package's postinst made, and
# copy in the entrypoint.
# pg_hook MAJOR is the customize hook of the image of PostgreSQL MAJOR.
pg_hook() {
  echo 'set -e
if chroot "$1" getent passwd 999 || chroot "$1" getent group 999; then echo "uid or gid 999 is taken" >&2; exit 1; fi
chroot "$1" usermod -u 999 postgres
chroot "$1" groupmod -g 999 postgres
rm -rf "$1/var/lib/postgresql/'"$1"'" "$1/etc/postgresql/'"$1"'"
mkdir -p "$1/var/lib/postgresql/data" "$1/run/postgresql" "$1/docker-entrypoint-initdb.d"
chroot "$1" chown -R 999:999 /var/lib/postgresql /run/postgresql
chmod 3777 "$1/run/postgresql"
install -m 0755 "'"$HERE"'/postgresql/docker-entrypoint.sh" "$1/usr/local/bin/docker-entrypoint.sh"'
}
PG_HOOK=$(pg_hook 15)
PG17_HOOK=$(pg_hook 17)
MARIADB_HOOK='set -e
if chroot "$1" getent passwd 999 || chroot "$1" getent group 999; then echo "uid or gid 999 is taken" >&2; exit 1; fi
chroot "$1" usermod -u 999 mysql
chroot "$1" groupmod -g 999 mysql
rm -rf "$1/var/lib/mysql"
mkdir -p "$1/var/lib/mysql" "$1/var/lib/mysql-files" "$1/run/mysqld" "$1/docker-entrypoint-initdb.d"
chroot "$1" chown -R 999:999 /var/lib/mysql /var/lib/mysql-files /run/mysqld
install -m 0644 "'"$HERE"'/mariadb/99-database-controller.cnf" "$1/etc/mysql/mariadb.conf.d/99-database-controller.cnf"
install -m 0755 "'"$HERE"'/mariadb/docker-entrypoint.sh" "$1/usr/local/bin/docker-entrypoint.sh"
install -D -m 0644 "'"$HERE"'/mysql-init.sh" "$1/usr/local/lib/dbc/mysql-init.sh"'

# mysql-server-core makes no mysql user (mysql-server'"'"'s scripts would):
# the hook does, as the official image has it. Without mysql-server, my.cnf
# is mysql-common'"'"'s fallback, which reads /etc/mysql/conf.d only: the
# server'"'"'s settings go there.
MYSQL_HOOK='set -e
if chroot "$1" getent passwd 999 || chroot "$1" getent group 999; then echo "uid or gid 999 is taken" >&2; exit 1; fi
chroot "$1" groupadd --system --gid 999 mysql
chroot "$1" useradd --system --uid 999 --gid 999 --home-dir /var/lib/mysql --no-create-home --shell /usr/sbin/nologin mysql
rm -rf "$1/var/lib/mysql"
mkdir -p "$1/var/lib/mysql" "$1/var/lib/mysql-files" "$1/run/mysqld" "$1/docker-entrypoint-initdb.d"
chroot "$1" chown -R 999:999 /var/lib/mysql /var/lib/mysql-files /run/mysqld
install -m 0644 "'"$HERE"'/mysql/mysqld.cnf" "$1/etc/mysql/conf.d/mysqld.cnf"
install -m 0755 "'"$HERE"'/mysql/docker-entrypoint.sh" "$1/usr/local/bin/docker-entrypoint.sh"
install -D -m 0644 "'"$HERE"'/mysql-init.sh" "$1/usr/local/lib/dbc/mysql-init.sh"'

# pg_config NAME MAJOR is the image config of PostgreSQL MAJOR.
pg_config() {
  printf '%s\n' -name "$1" -user 999:999 -stop-signal SIGINT -port 5432/tcp \
    -entrypoint /usr/local/bin/docker-entrypoint.sh -cmd postgres \
    -env "PATH=/usr/lib/postgresql/$2/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    -env LANG=C.UTF-8 -env PGDATA=/var/lib/postgresql/data
}
mapfile -t PG_CONFIG < <(pg_config "$DBC_POSTGRESQL_IMAGE" 15)
mapfile -t PG17_CONFIG < <(pg_config "$DBC_POSTGRESQL17_IMAGE" 17)
MARIADB_CONFIG=(-name "$DBC_MARIADB_IMAGE" -user 999:999 -port 3306/tcp
  -entrypoint /usr/local/bin/docker-entrypoint.sh -cmd mariadbd
  -env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -env LANG=C.UTF-8)
MARIADB118_CONFIG=("${MARIADB_CONFIG[@]}" -name "$DBC_MARIADB118_IMAGE")
MYSQL_CONFIG=(-name "$DBC_MYSQL_IMAGE" -user 999:999 -port 3306/tcp
  -entrypoint /usr/local/bin/docker-entrypoint.sh -cmd mysqld
  -env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -env LANG=C.UTF-8)
# The exporters run as nobody, as the upstream images do (the pods run
# them as the server's user).
POSTGRES_EXPORTER_CONFIG=(-name "$DBC_POSTGRES_EXPORTER_IMAGE" -user 65534:65534 -port 9187/tcp
  -entrypoint /usr/bin/prometheus-postgres-exporter -env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
MYSQLD_EXPORTER_CONFIG=(-name "$DBC_MYSQLD_EXPORTER_IMAGE" -user 65534:65534 -port 9104/tcp
  -entrypoint /usr/bin/prometheus-mysqld-exporter -env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
EXPORTER_PACKAGES=prometheus-postgres-exporter,prometheus-mysqld-exporter
PAUSE_CONFIG=(-name "$DBC_PAUSE_IMAGE" -user 65535:65535 -entrypoint /pause)
CONTROLLER_CONFIG=(-name "$DBC_CONTROLLER_IMAGE" -user 65532:65532 -entrypoint /controller)

# stamp_of IMAGE PARTS... prints a digest of what the image is made from.
# The checkout's path, which the hooks name the files they install by, is
# not part of it (the files' contents are), so that another checkout of
# the same inputs has the same stamps (hack/lib/build-cache.sh).
stamp_of() {
  local image=$1 part; shift
  { echo "$image"; for part in "$@"; do printf '%s\n' "${part//"$ROOT"/<checkout>}"; done
    cat "$ROOT/hack/tools/node/ociarchive/main.go"; } | sha256sum | cut -d' ' -f1
}

# build IMAGE STAMP COMMAND runs COMMAND (which writes $OUT/IMAGE.tar)
# unless the archive is there with the same stamp.
build() {
  local image=$1 stamp=$2 cmd=$3
  if [[ -f "$OUT/$image.tar" && -f "$OUT/.$image.stamp" && "$(cat "$OUT/.$image.stamp")" == "$stamp" ]]; then
    log "$image: up to date ($OUT/$image.tar)"
    return
  fi
  local start=$SECONDS
  rm -f "$OUT/.$image.stamp"
  if cache_get "images/$image" "$stamp" "$OUT" && [[ -f "$OUT/$image.tar" ]]; then
    echo "$stamp" > "$OUT/.$image.stamp"
    log "$image: copied from the build cache ($DBC_BUILD_CACHE) in $((SECONDS - start))s"
    return
  fi
  log "$image: building $OUT/$image.tar"
  "$cmd"
  echo "$stamp" > "$OUT/.$image.stamp"
  # With the root filesystem that images layered over it read.
  cache_put "images/$image" "$stamp" "$OUT" "$image.tar" "$image.rootfs.tar"
  log "$image: built in $((SECONDS - start))s ($(du -m "$OUT/$image.tar" | cut -f1) MiB)"
}

# debian_image IMAGE PACKAGES HOOK CONFIG... makes the root filesystem with
# mmdebstrap and writes it as the archive's one layer. With KEEP_ROOTFS=1
# it keeps the root filesystem tar ($OUT/IMAGE.rootfs.tar) for images
# layered over it.
debian_image() {
  local image=$1 packages=$2 hook=$3; shift 3
  local rootfs="$OUT/$image.rootfs.tar"
  "$ROOT/hack/tools/debian-deps.sh" mmdebstrap:mmdebstrap
  [[ $(id -u) -eq 0 ]] || { echo "build-images: mmdebstrap --mode=root needs root" >&2; return 1; }
  rm -f "$rootfs"
  mmdebstrap --quiet --mode=root --variant=minbase --format=tar --include="$packages" \
    "${DPKG_EXCLUDES[@]}" ${IMAGE_APTOPT:+--aptopt="$IMAGE_APTOPT"} --customize-hook="$hook" "${IMAGE_SUITE:-$SUITE}" "$rootfs" "$MIRROR" >&2
  "$BIN/ociarchive" -rootfs "$rootfs" -o "$OUT/$image.tar" "$@"
  [[ ${KEEP_ROOTFS:-} == 1 ]] || rm -f "$rootfs"
}

# one_file_image IMAGE FILE CONFIG... writes an image whose root holds FILE
# alone, named IMAGE's name.
one_file_image() {
  local image=$1 file=$2 dir; shift 2
  dir=$(mktemp -d)
  cp "$file" "$dir/$image"
  tar --owner=0 --group=0 --mtime=@0 -C "$dir" -cf "$dir/rootfs.tar" "$image"
  "$BIN/ociarchive" -rootfs "$dir/rootfs.tar" -o "$OUT/$image.tar" "$@"
  rm -rf "$dir"
}
build_pause() { one_file_image pause "$BIN/pause" "${PAUSE_CONFIG[@]}"; }
# The controller's binary is built here, through hack/build.sh (Go's cache
# makes it quick), so that the image is never older than the source; its
# version is fixed so that the stamp changes only with the code.
CONTROLLER_BIN="$OUT/.controller-bin"
build_controller_binary() {
  VERSION=dev OUT="$CONTROLLER_BIN" "$ROOT/hack/build.sh"
}
build_controller() { one_file_image controller "$CONTROLLER_BIN" "${CONTROLLER_CONFIG[@]}"; }
build_postgresql() { KEEP_ROOTFS=1 debian_image postgresql postgresql-15 "$PG_HOOK" "${PG_CONFIG[@]}"; }
# The slow-init image shares postgresql's layer (the node stores it once)
# and adds /docker-entrypoint-initdb.d/00-slow-init.sh over it. Its config
# is postgresql's with another name (ociarchive takes the last -name).
build_postgresql_slowinit() {
  if [[ ! -f "$OUT/postgresql.rootfs.tar" ]]; then
    rm -f "$OUT/.postgresql.stamp"
    build postgresql "$(postgresql_stamp)" build_postgresql
  fi
  local dir
  dir=$(mktemp -d)
  install -D -m 0755 "$HERE/postgresql/slow-init.sh" "$dir/root/docker-entrypoint-initdb.d/00-slow-init.sh"
  tar --owner=0 --group=0 --mtime=@0 -C "$dir/root" -cf "$dir/layer.tar" docker-entrypoint-initdb.d
  "$BIN/ociarchive" -rootfs "$OUT/postgresql.rootfs.tar" -layer "$dir/layer.tar" -o "$OUT/postgresql-slowinit.tar" \
    "${PG_CONFIG[@]}" -name "$DBC_POSTGRESQL_SLOWINIT_IMAGE"
  rm -rf "$dir"
}
postgresql_stamp() {
  stamp_of postgresql "$SUITE" "$MIRROR" postgresql-15 "$PG_HOOK" "${PG_CONFIG[*]}" \
    "${DPKG_EXCLUDES[*]}" "$(cat "$HERE/postgresql/docker-entrypoint.sh")" keep-rootfs
}
build_postgresql17() { IMAGE_SUITE=$PG17_SUITE debian_image postgresql17 postgresql-17 "$PG17_HOOK" "${PG17_CONFIG[@]}"; }
build_mariadb() { debian_image mariadb mariadb-server,mariadb-client "$MARIADB_HOOK" "${MARIADB_CONFIG[@]}"; }
build_mariadb118() {
  IMAGE_SUITE=$MARIADB118_SUITE debian_image mariadb118 mariadb-server,mariadb-client "$MARIADB_HOOK" "${MARIADB118_CONFIG[@]}"
}
mariadb_files() { cat "$HERE/mariadb/docker-entrypoint.sh" "$HERE/mariadb/99-database-controller.cnf" "$HERE/mysql-init.sh"; }
# mysql-server-core has the server alone, with no package scripts that
# initialise a data directory; mysql-client has mysql, mysqladmin and
# mysqldump.
MYSQL_PACKAGES=mysql-server-core,mysql-client
# The mirror's unstable suite may carry a Release file past its Valid-Until
# date (it was 18 days past it here): its signature is still checked.
MYSQL_APTOPT='Acquire::Check-Valid-Until "false"'
build_mysql() {
  IMAGE_SUITE=$MYSQL_SUITE IMAGE_APTOPT=$MYSQL_APTOPT debian_image mysql "$MYSQL_PACKAGES" "$MYSQL_HOOK" "${MYSQL_CONFIG[@]}"
}
# The exporters' images share one root filesystem (the node stores its
# layer once): postgres-exporter's, kept for mysqld-exporter's.
build_postgres_exporter() {
  IMAGE_SUITE=$EXPORTERS_SUITE KEEP_ROOTFS=1 debian_image postgres-exporter "$EXPORTER_PACKAGES" 'true' "${POSTGRES_EXPORTER_CONFIG[@]}"
}
postgres_exporter_stamp() {
  stamp_of postgres-exporter "$EXPORTERS_SUITE" "$MIRROR" "$EXPORTER_PACKAGES" "${POSTGRES_EXPORTER_CONFIG[*]}" "${DPKG_EXCLUDES[*]}" keep-rootfs
}
build_mysqld_exporter() {
  if [[ ! -f "$OUT/postgres-exporter.rootfs.tar" ]]; then
    rm -f "$OUT/.postgres-exporter.stamp"
    build postgres-exporter "$(postgres_exporter_stamp)" build_postgres_exporter
  fi
  "$BIN/ociarchive" -rootfs "$OUT/postgres-exporter.rootfs.tar" -o "$OUT/mysqld-exporter.tar" "${MYSQLD_EXPORTER_CONFIG[@]}"
}

wanted=("$@")
((${#wanted[@]} > 0)) || wanted=(pause controller postgresql postgresql-slowinit postgresql17 mariadb mariadb118 mysql postgres-exporter mysqld-exporter)
for image in "${wanted[@]}"; do
  case "$image" in
    pause)
      build pause "$(stamp_of pause "$(sha256sum < "$BIN/pause")" "${PAUSE_CONFIG[*]}")" build_pause ;;
    controller)
      build_controller_binary
      build controller "$(stamp_of controller "$(sha256sum < "$CONTROLLER_BIN")" "${CONTROLLER_CONFIG[*]}")" build_controller ;;
    postgresql)
      build postgresql "$(postgresql_stamp)" build_postgresql ;;
    postgresql-slowinit)
      build postgresql-slowinit "$(stamp_of postgresql-slowinit "$(postgresql_stamp)" \
        "$(cat "$HERE/postgresql/slow-init.sh")" "$DBC_POSTGRESQL_SLOWINIT_IMAGE")" build_postgresql_slowinit ;;
    postgresql17)
      build postgresql17 "$(stamp_of postgresql17 "$PG17_SUITE" "$MIRROR" postgresql-17 "$PG17_HOOK" "${PG17_CONFIG[*]}" \
        "${DPKG_EXCLUDES[*]}" "$(cat "$HERE/postgresql/docker-entrypoint.sh")")" build_postgresql17 ;;
    mariadb)
      build mariadb "$(stamp_of mariadb "$SUITE" "$MIRROR" mariadb-server,mariadb-client "$MARIADB_HOOK" \
        "${MARIADB_CONFIG[*]}" "${DPKG_EXCLUDES[*]}" "$(mariadb_files)")" build_mariadb ;;
    mariadb118)
      build mariadb118 "$(stamp_of mariadb118 "$MARIADB118_SUITE" "$MIRROR" mariadb-server,mariadb-client "$MARIADB_HOOK" \
        "${MARIADB118_CONFIG[*]}" "${DPKG_EXCLUDES[*]}" "$(mariadb_files)")" build_mariadb118 ;;
    mysql)
      build mysql "$(stamp_of mysql "$MYSQL_SUITE" "$MIRROR" "$MYSQL_PACKAGES" "$MYSQL_APTOPT" "$MYSQL_HOOK" \
        "${MYSQL_CONFIG[*]}" "${DPKG_EXCLUDES[*]}" "$(cat "$HERE/mysql/docker-entrypoint.sh" \
        "$HERE/mysql/mysqld.cnf" "$HERE/mysql-init.sh")")" build_mysql ;;
    postgres-exporter)
      build postgres-exporter "$(postgres_exporter_stamp)" build_postgres_exporter ;;
    mysqld-exporter)
      build mysqld-exporter "$(stamp_of mysqld-exporter "$(postgres_exporter_stamp)" "${MYSQLD_EXPORTER_CONFIG[*]}")" build_mysqld_exporter ;;
    *) echo "build-images: unknown image '$image' (pause controller postgresql postgresql-slowinit postgresql17 mariadb mariadb118 mysql postgres-exporter mysqld-exporter)" >&2; exit 2 ;;
  esac
done

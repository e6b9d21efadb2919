# shellcheck shell=bash
# The names of the real node's images, built by hack/images/build.sh and
# imported by hack/lib/node.sh. (test/e2e/realnode_test.go spells them too.)
# shellcheck disable=SC2034 # used by the scripts that source this file
DBC_PAUSE_IMAGE=localhost/dbc/pause:3.10.2
# shellcheck disable=SC2034
DBC_CONTROLLER_IMAGE=localhost/dbc/controller:dev
# shellcheck disable=SC2034
DBC_POSTGRESQL_IMAGE=localhost/dbc/postgresql:15
# shellcheck disable=SC2034
DBC_POSTGRESQL17_IMAGE=localhost/dbc/postgresql:17
# shellcheck disable=SC2034
DBC_POSTGRESQL_SLOWINIT_IMAGE=localhost/dbc/postgresql-slowinit:15
# shellcheck disable=SC2034
DBC_MARIADB_IMAGE=localhost/dbc/mariadb:10.11
# shellcheck disable=SC2034
DBC_MARIADB118_IMAGE=localhost/dbc/mariadb:11.8
# shellcheck disable=SC2034
DBC_MYSQL_IMAGE=localhost/dbc/mysql:9.7
# shellcheck disable=SC2034
DBC_POSTGRES_EXPORTER_IMAGE=localhost/dbc/postgres-exporter:0.17.1
# shellcheck disable=SC2034
DBC_MYSQLD_EXPORTER_IMAGE=localhost/dbc/mysqld-exporter:0.17.2

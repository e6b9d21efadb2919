//go:build e2e

package realnode

import "testing"

// The suite's four longest tests (330-420 s each in CI, where all but six
// others take under 200 s), declared first, in a file named to sort first:
// go test starts parallel tests in the order they are declared, files by
// name, and these, declared last (in mysql_* and tls_test.go), took their
// slots after every other test had and ended the suite about 250 s after
// the rest of its work was done (CI on 2026-11-27: 5,520 s of tests on four
// slots, 1,964 s). Their bodies stay beside the helpers they use.

// TestPostgreSQLTLS: checkPostgreSQLTLS.
func TestPostgreSQLTLS(t *testing.T) {
	t.Parallel()
	checkPostgreSQLTLS(t)
}

// TestMySQLTLS: checkMySQLTLS, on MySQL 9.7.
func TestMySQLTLS(t *testing.T) {
	t.Parallel()
	checkMySQLTLS(t, "9.7", mysqlImage)
}

// TestMariaDBTLS: checkMySQLTLS, on MariaDB 10.11.
func TestMariaDBTLS(t *testing.T) {
	t.Parallel()
	checkMySQLTLS(t, "10.11", mariadbImage)
}

// TestMySQLReplication: checkMySQLReplication.
func TestMySQLReplication(t *testing.T) {
	t.Parallel()
	checkMySQLReplication(t)
}

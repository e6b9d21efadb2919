//go:build e2e

package realnode

import "testing"

// The suite's longest tests that end it, declared first: go test releases
// its parallel tests, -parallel at a time, in about the order of their
// files and declarations. The TLS tests wait out the trust period and the
// kubelet's sync of a Secret for most of their five to six minutes; begun
// last (their files' names), they were the suite's tail in CI, the last
// minutes with little else running.

func TestMySQLTLS(t *testing.T) {
	t.Parallel()
	checkMySQLTLS(t, "9.7", mysqlImage)
}

// TestMariaDBTLS is TestMySQLTLS for MariaDB 10.11.
func TestMariaDBTLS(t *testing.T) {
	t.Parallel()
	checkMySQLTLS(t, "10.11", mariadbImage)
}

func TestPostgreSQLTLS(t *testing.T) {
	t.Parallel()
	checkPostgreSQLTLS(t)
}

func TestParameters(t *testing.T) {
	t.Parallel()
	checkParameters(t)
}

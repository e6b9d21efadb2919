//go:build e2e

package realnode

import (
	"fmt"
	"strings"
	"testing"
	"time"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/mysqlsql"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// mysqlTLSClientPod is a client of a mysql Database that verifies the
// server fully (its certificate and its name) with only what the
// credentials Secret gives it: the Secret's keys as environment variables
// (as clientPod's), and the Secret mounted for its ca.crt; $TLS holds the
// image's client's options for it (MySQL's --ssl-mode=VERIFY_IDENTITY,
// MariaDB's --ssl-verify-server-cert), and $PLAIN those for plain text.
func mysqlTLSClientPod(name, db, image, script string) string {
	verify, plain := "--ssl-mode=VERIFY_IDENTITY --ssl-ca=/etc/db/ca.crt", "--ssl-mode=DISABLED"
	if image == mariadbImage {
		verify, plain = "--ssl --ssl-verify-server-cert --ssl-ca=/etc/db/ca.crt", "--skip-ssl"
	}
	var env strings.Builder
	for _, k := range []string{"username", "password", "host", "port", "database"} {
		fmt.Fprintf(&env, "    - name: %s\n      valueFrom: {secretKeyRef: {name: %s-credentials, key: %s}}\n", strings.ToUpper(k), db, k)
	}
	fmt.Fprintf(&env, "    - name: TLS\n      value: %q\n    - name: PLAIN\n      value: %q\n", verify, plain)
	return podManifest(name, image, script, env.String(), fmt.Sprintf(`    volumeMounts:
    - {name: db, mountPath: /etc/db, readOnly: true}
  volumes:
  - name: db
    secret: {secretName: %s-credentials}
`, db))
}

// mysqlTLSSQL runs its argument with the image's client, verifying the
// server with $TLS, at $H or the Secret's host.
const mysqlTLSSQL = `MYSQL_PWD="$PASSWORD" mysql $TLS -h "${H:-$HOST}" -P "$PORT" -u "$USERNAME" --connect-timeout=3 -N -s "$DATABASE" -e `

// sessionCipher prints the client's own session's TLS version, nothing in
// plain text (MariaDB's performance_schema is off by default: SHOW).
const sessionCipher = `"SHOW SESSION STATUS LIKE 'Ssl_version'" | cut -f2`

func tryMySQLTLSClient(t *testing.T, ns, db, image, script string) (string, error) {
	t.Helper()
	return tryPod(t, ns, func(name string) string { return mysqlTLSClientPod(name, db, image, script) })
}

// A 2-replica MySQL 9.7 and a 2-replica MariaDB 10.11 Database with the
// default TLS: a client verifies the server fully with the credentials
// Secret alone, and a name the certificate does not have fails
// verification; plain text is still served. The replica's channel
// verifies the primary's certificate and name. Then Required: the
// servers restart with require_secure_transport, plain text is refused,
// the verifying client, the replication and the controller (Replicating,
// which it learns over SQL) go on over TLS. Last, the authority is
// replaced (Secret <name>-ca deleted) under a writer that verifies for
// every write (rotateUnderAWriter): every server presents the new one's
// certificate after a reload (ALTER INSTANCE RELOAD TLS, FLUSH SSL), with
// no restart, and no connection of the writer fails.
// (Two tests, not parallel subtests: those would wait for a slot of
// -parallel behind every other test of the suite, and end it late.)
func TestMySQLTLS(t *testing.T) {
	parallel(t)
	checkMySQLTLS(t, "9.7", mysqlImage)
}

// TestMariaDBTLS is TestMySQLTLS for MariaDB 10.11.
func TestMariaDBTLS(t *testing.T) {
	parallel(t)
	checkMySQLTLS(t, "10.11", mariadbImage)
}

func checkMySQLTLS(t *testing.T, version, image string) {
	ns := e2eutil.NewNamespace(t)
	const name = "sealed"
	start := time.Now()
	e2eutil.KubectlIn(t, mysqlYAML(name, version, image, 2), "-n", ns, "create", "-f", "-")
	db := waitReplicating(t, ns, name, "two replicas, one primary and one replicating")
	t.Logf("Running and replicating with TLS after %s", time.Since(start).Round(time.Second))
	if st := db.Status.TLS; st == nil || st.Mode != dbv1alpha1.TLSEnabled || st.Secret != name+"-tls" || st.NotAfter == nil {
		t.Errorf("status.tls %+v, want Enabled, Secret %s-tls, an expiry date", st, name)
	}

	// Full verification with the Secret alone; plain text still served; a
	// name the certificate does not have (the primary's pod address) fails
	// verification.
	ip := strings.TrimSpace(e2eutil.Kubectl(t, "-n", ns, "get", "pod", db.Status.Replication.Primary, "-o", "jsonpath={.status.podIP}"))
	out, err := tryMySQLTLSClient(t, ns, name, image, waitMySQL+`set -e
echo "verified $(`+mysqlTLSSQL+sessionCipher+`)"
echo "plain: $(TLS=$PLAIN; `+mysqlTLSSQL+`"SELECT 'served'") cipher=[$(TLS=$PLAIN; `+mysqlTLSSQL+sessionCipher+`)]"
if (H=`+ip+`; `+mysqlTLSSQL+`"SELECT 1") 2>/tmp/err; then echo "unverified name accepted"; else echo "by address: $(cat /tmp/err)"; fi`)
	if err != nil {
		t.Fatalf("TLS client: %v\n%s", err, out)
	}
	t.Logf("a client with TLS Enabled:\n%s", strings.TrimSpace(out))
	if !strings.Contains(out, "verified TLSv1.") || !strings.Contains(out, "plain: served cipher=[]") || !strings.Contains(out, "by address: ") {
		t.Errorf("want a verified TLS session, plain text served, and a connection by address refused, got:\n%s", out)
	}

	// The replica's channel verifies the primary.
	checkChannelVerifies(t, ns, name, image, db.Status.Replication.Primary)

	// Required.
	db = requireTLS(t, ns, name)
	out, err = tryMySQLTLSClient(t, ns, name, image, `TLS=$PLAIN; `+mysqlTLSSQL+`"SELECT 1"`)
	if err == nil {
		t.Errorf("a plain-text client with TLS Required was served:\n%s", out)
	} else {
		t.Logf("a plain-text client with TLS Required: %s", strings.TrimSpace(out))
	}
	if out, err := tryMySQLTLSClient(t, ns, name, image, mysqlTLSSQL+sessionCipher); err != nil || !strings.HasPrefix(out, "TLSv1.") {
		t.Errorf("a verifying client with TLS Required: %v\n%s\nwant a TLS session", err, out)
	}
	checkChannelVerifies(t, ns, name, image, db.Status.Replication.Primary)

	// The authority replaced under a writer that verifies for every write:
	// every server presents the new one's certificate after a reload.
	rotateUnderAWriter(t, ns, name, rotation{
		container: "mysql", port: 3306, presented: mysqlsql.Presented, seconds: 480,
		writer: func(t *testing.T, ns, db string, seconds int, pinned string) *writer {
			runClient(t, ns, db, image, waitMySQL+mysqlSQL+`"CREATE TABLE IF NOT EXISTS w (n INT PRIMARY KEY)"`)
			name := "tls-writer"
			return startPod(t, ns, name, mysqlTLSClientPod(name, db, image, rotationTimeout+fmt.Sprintf(mysqlWriterScript, seconds))+pinned)
		},
	})
}

// checkChannelVerifies asks the replica (the pod that is not primary) how
// its replication channel connects: over TLS, verifying the primary's
// certificate against the authorities and its name, and receiving.
func checkChannelVerifies(t *testing.T, ns, name, image, primary string) {
	t.Helper()
	replica := name + "-0"
	if primary == replica {
		replica = name + "-1"
	}
	query := mysqlTLSSQL + `"SELECT CONCAT_WS(' ', c.SSL_ALLOWED, c.SSL_CA_FILE, c.SSL_VERIFY_SERVER_CERTIFICATE, s.SERVICE_STATE) FROM performance_schema.replication_connection_configuration c JOIN performance_schema.replication_connection_status s USING (CHANNEL_NAME)"`
	want := "YES /etc/dbc-tls/ca.crt YES ON"
	if image == mariadbImage {
		// (Vertical, with the names, which -N would drop.)
		query = `MYSQL_PWD="$PASSWORD" mysql $TLS -h "$H" -P "$PORT" -u "$USERNAME" --connect-timeout=3 -E -e "SHOW REPLICA STATUS" | sed -n -e 's/^ *Master_SSL_Allowed: //p' -e 's/^ *Master_SSL_CA_File: //p' -e 's/^ *Master_SSL_Verify_Server_Cert: //p' -e 's/^ *Slave_IO_Running: //p' | tr '\n' ' '`
		// (In the order SHOW REPLICA STATUS has them.)
		want = "Yes Yes /etc/dbc-tls/ca.crt Yes "
	}
	// (OpenSSL matches a wildcard only with two labels after it: the
	// namespaced form.)
	script := fmt.Sprintf(`H=%s
for i in $(seq 50); do got=$(%s); [ "$got" = %q ] && break; sleep 0.2; done
echo "$got"`, podHost(ns, name, replica), query, want)
	out, err := tryMySQLTLSClient(t, ns, name, image, script)
	if err != nil || strings.TrimRight(out, "\n") != want {
		t.Errorf("%s's replication channel: %v %q, want %q (over TLS, verifying the primary, receiving)", replica, err, out, want)
	}
}

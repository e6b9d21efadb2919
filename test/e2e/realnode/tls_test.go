//go:build e2e

package realnode

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/certs"
	"github.com/dbcontroller/database-controller/pkg/ha"
	"github.com/dbcontroller/database-controller/pkg/pgsql"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// tlsClientPod is the README's example of a client that verifies the
// server fully with only what the credentials Secret gives it: the
// Secret mounted for its ca.crt, its uri, and libpq's PGSSLMODE and
// PGSSLROOTCERT. extraEnv is more of the container's environment, as
// YAML list items.
func tlsClientPod(name, db, image, script, extraEnv string) string {
	return podManifest(name, image, script, fmt.Sprintf(`    - name: DATABASE_URL
      valueFrom: {secretKeyRef: {name: %s-credentials, key: uri}}
    - name: PGSSLMODE
      value: verify-full
    - name: PGSSLROOTCERT
      value: /etc/db/ca.crt
%s`, db, extraEnv), fmt.Sprintf(`    volumeMounts:
    - {name: db, mountPath: /etc/db, readOnly: true}
  volumes:
  - name: db
    secret: {secretName: %s-credentials}
`, db))
}

// tryTLSClient runs script in a tlsClientPod of db.
func tryTLSClient(t *testing.T, ns, db, script, extraEnv string) (string, error) {
	t.Helper()
	return tryPod(t, ns, func(name string) string { return tlsClientPod(name, db, postgresImage, script, extraEnv) })
}

func runTLSClient(t *testing.T, ns, db, script, extraEnv string) string {
	t.Helper()
	out, err := tryTLSClient(t, ns, db, script, extraEnv)
	if err != nil {
		t.Fatalf("TLS client of %s/%s: %v\n%s", ns, db, err, out)
	}
	return strings.TrimSpace(out)
}

// sessionTLS asks the server whether the client's own session is
// encrypted, and with which protocol.
const sessionTLS = `psql "$DATABASE_URL" -X -tAc "SELECT ssl || ' ' || coalesce(version, '-') FROM pg_stat_ssl WHERE pid = pg_backend_pid()"`

// A 2-replica PostgreSQL Database with the default TLS: a client pod
// verifies the server fully with only what the Secret gives it, while a
// name the certificate does not have fails verification and a plain-text
// client is still served; the replica streams over TLS; the handshake's
// cost is measured with pgbench, connecting for every transaction. Then
// Required: the servers restart with hostssl rules, a plain-text client is
// refused, and the verifying client, the replication and the controller
// (Replicating, which it learns over SQL) go on over TLS. Last, the
// authority is replaced under a writer (rotateUnderAWriter), which also
// renews the servers' certificate without a restart.
func TestPostgreSQLTLS(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, dbYAML("secure", "postgresql", "15", postgresImage, 2), "-n", ns, "create", "-f", "-")
	db := waitReplicating(t, ns, "secure", "two replicas, one primary and one streaming")
	if db.Spec.TLS == nil || db.Spec.TLS.Mode != dbv1alpha1.TLSEnabled {
		t.Errorf("spec.tls %+v, want the API server's default, mode Enabled", db.Spec.TLS)
	}
	st := db.Status.TLS
	if st == nil || st.Mode != dbv1alpha1.TLSEnabled || st.Secret != "secure-tls" || st.NotAfter == nil || st.RenewAt == nil || st.AuthorityNotAfter == nil ||
		time.Until(st.NotAfter.Time) < 89*24*time.Hour || !st.RenewAt.Before(st.NotAfter) {
		t.Errorf("status.tls %+v, want Enabled, Secret secure-tls, a certificate for 90 days, renewed before it expires", st)
	}

	// 1. Full verification, with the Secret alone.
	if got := runTLSClient(t, ns, "secure", sessionTLS, ""); !strings.HasPrefix(got, "true TLSv1.") && !strings.HasPrefix(got, "t TLSv1.") {
		t.Errorf("a verify-full client's session: %q, want TLS", got)
	}
	// A name the certificate does not have: the primary's pod address.
	ip := strings.TrimSpace(e2eutil.Kubectl(t, "-n", ns, "get", "pod", db.Status.Replication.Primary, "-o", "jsonpath={.status.podIP}"))
	out, err := tryTLSClient(t, ns, "secure", `psql "$(echo "$DATABASE_URL" | sed "s/@[^:/]*/@$ADDRESS/")" -X -tAc "SELECT 1"`,
		fmt.Sprintf("    - name: ADDRESS\n      value: %q\n", ip))
	if err == nil || !strings.Contains(out, "does not match host name") {
		t.Errorf("a verify-full client of %s, a name not on the certificate: %v\n%s\nwant the verification to fail", ip, err, out)
	}
	// Enabled serves plain text too: nothing changes for an older client.
	if got := runTLSClient(t, ns, "secure", `PGSSLMODE=disable `+sessionTLS, ""); !strings.HasPrefix(got, "f") {
		t.Errorf("a plain-text client's session: %q, want plain text, served", got)
	}

	// 3. The replica streams over TLS.
	replicationTLS := `psql "$DATABASE_URL" -X -tAc "SELECT count(*) || ' ' || coalesce(bool_and(s.ssl)::text, '-') FROM pg_stat_replication r JOIN pg_stat_ssl s ON s.pid = r.pid"`
	if got := runTLSClient(t, ns, "secure", replicationTLS, ""); got != "1 true" {
		t.Errorf("WAL senders and whether all are encrypted: %q, want 1 true", got)
	}

	// The handshake's cost: pgbench, a new connection per transaction,
	// with and without TLS, against the same server.
	bench := runTLSClient(t, ns, "secure", `set -e
pgbench "$DATABASE_URL" -i -s 1 -q >/dev/null 2>&1
for mode in disable verify-full; do
  printf '%s ' "$mode"
  PGSSLMODE=$mode pgbench "$DATABASE_URL" -C -S -c 2 -T 5 -n 2>&1 | grep -E '^tps' | head -1
done`, "")
	t.Logf("pgbench -C -S -c 2 -T 5, a connection per transaction:\n%s", bench)

	// 2. Required.
	db = requireTLS(t, ns, "secure")
	out, err = tryTLSClient(t, ns, "secure", `PGSSLMODE=disable `+sessionTLS, "")
	if err == nil || !strings.Contains(out, "no encryption") {
		t.Errorf("a plain-text client with TLS Required: %v\n%s\nwant it refused (no pg_hba.conf entry, no encryption)", err, out)
	} else {
		t.Logf("a plain-text client with TLS Required: %s", strings.TrimSpace(out))
	}
	if got := runTLSClient(t, ns, "secure", sessionTLS, ""); !strings.HasPrefix(got, "t") {
		t.Errorf("a verify-full client's session with TLS Required: %q, want TLS", got)
	}
	if got := runTLSClient(t, ns, "secure", replicationTLS, ""); got != "1 true" {
		t.Errorf("with TLS Required, WAL senders and whether all are encrypted: %q, want 1 true", got)
	}

	rotateUnderAWriter(t, ns, "secure", postgresRotation)
}

// requireTLS sets db's spec.tls.mode to Required and waits until its
// servers restarted with it: Running, replicating, status.tls saying so.
func requireTLS(t *testing.T, ns, name string) *dbv1alpha1.Database {
	t.Helper()
	var db *dbv1alpha1.Database
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/"+name, "--type=merge", "-p", `{"spec":{"tls":{"mode":"Required"}}}`)
	e2eutil.Eventually(t, 3*converge, "the servers restarted with TLS Required", func() (bool, string) {
		db = e2eutil.GetDB(t, ns, name)
		running, msg := e2eutil.IsRunning(db)
		rs, _, rmsg := e2eutil.Condition(db, dbv1alpha1.ConditionReplicating)
		mode := dbv1alpha1.TLSMode("-")
		if db.Status.TLS != nil {
			mode = db.Status.TLS.Mode
		}
		return running && rs == "True" && mode == dbv1alpha1.TLSRequired && db.Status.ObservedGeneration == db.Generation,
			fmt.Sprintf("%s; Replicating %s (%s); status.tls.mode %s", msg, rs, rmsg, mode)
	})
	return db
}

// rotation is what rotateUnderAWriter needs of an engine: its server's
// container and port, how to ask a server which certificate it presents,
// and a writer that verifies fully with the credentials Secret's mounted
// ca.crt, connecting for every write, for at most seconds: it is stopped
// once its own ca.crt holds the new authority alone (4m37s after the
// authority's delete in the slowest run seen, on a busy node), or ends
// at that bound if it cannot be.
type rotation struct {
	container string
	port      int32
	presented func(context.Context, string, int32, ha.Credentials) (string, error)
	// writer starts the writer's pod; pinned is YAML of its pod spec
	// (pinnedHost) to append to its manifest.
	writer  func(t *testing.T, ns, db string, seconds int, pinned string) *writer
	seconds int
}

// pinnedHost is YAML of a pod spec that resolves the host of db's
// credentials Secret to its Service's cluster IP from the pod's own hosts
// file: the rotation's writer connects, and so resolves that name, for
// each of its thousands of writes, and on the suite's busy node cluster DNS
// once left one lookup unanswered through its five tries ("Unknown MySQL
// server host ... (-3)") while the rotation went as it should. The name is
// still the one the writer verifies the server's certificate against;
// cluster DNS resolving it is TestPostgreSQLServesThroughTheSecretURI's.
func pinnedHost(t *testing.T, ns, db string) string {
	t.Helper()
	ip := strings.TrimSpace(e2eutil.Kubectl(t, "-n", ns, "get", "service", db, "-o", "jsonpath={.spec.clusterIP}"))
	if ip == "" || ip == "None" {
		t.Fatalf("Service %s/%s has no cluster IP", ns, db)
	}
	return fmt.Sprintf("  hostAliases:\n  - ip: %q\n    hostnames: [%q]\n", ip, secretValue(t, ns, db, "host"))
}

var postgresRotation = rotation{
	container: "postgresql", port: 5432, presented: pgsql.Presented, seconds: 480,
	writer: func(t *testing.T, ns, db string, seconds int, pinned string) *writer {
		runTLSClient(t, ns, db, `psql "$DATABASE_URL" -X -qc "CREATE TABLE IF NOT EXISTS w (n int PRIMARY KEY)"`, "")
		name := "tls-writer"
		return startPod(t, ns, name, tlsClientPod(name, db, postgresImage, "URI=\"$DATABASE_URL\"\n"+rotationTimeout+fmt.Sprintf(writerScript, seconds), "")+pinned)
	},
}

// rotationTimeout gives the rotation's writer fifteen seconds to connect,
// not the failover writers' one: it counts every connection that fails,
// and on the suite's busy two cores a connection with a TLS handshake can
// take over a second with no fault of the rotation's. (One of 5,207 failed
// in a CI run, when the writer did not record why; on a slower machine,
// whose two cores the suite keeps busy, 4 of 165 timed out at five
// seconds, with no other error.) A rotation that breaks the clients' trust
// fails them at once, whatever the timeout.
const rotationTimeout = "CONNECT_TIMEOUT=15\n"

// rotateUnderAWriter replaces db's certificate authority, as its README
// says (delete Secret <name>-ca), while a client that verifies fully
// against the credentials Secret's mounted ca.crt connects for every
// write: the new authority is trusted beside the old one for the suite's
// --tls-trust-period (2m), then signs a new server certificate, which
// every server presents by a reload, with no pod restarted; then the old
// authority is dropped from the bundle; the writer writes on until its
// own mounted ca.crt holds the new authority alone. No connection of the
// writer fails.
func rotateUnderAWriter(t *testing.T, ns, db string, e rotation) {
	var oldCA corev1.Secret
	e2eutil.GetJSON(t, &oldCA, "-n", ns, "get", "secret", db+"-ca")
	pods := podStarts(t, ns, db, e.container)
	w := e.writer(t, ns, db, e.seconds, pinnedHost(t, ns, db))
	w.waitAcknowledged(t, 3)

	e2eutil.Kubectl(t, "-n", ns, "delete", "secret", db+"-ca")
	deleted := time.Now()
	var caSerial string
	var presentedAt time.Duration
	e2eutil.Eventually(t, 3*converge, "the new authority alone trusted, its certificate presented by every server", func() (bool, string) {
		var ca, server, creds corev1.Secret
		for name, into := range map[string]*corev1.Secret{db + "-ca": &ca, db + "-tls": &server, db + "-credentials": &creds} {
			if err := e2eutil.TryGetJSON(into, "-n", ns, "get", "secret", name); err != nil {
				return false, err.Error()
			}
		}
		caSerial = ca.Annotations[builder.AnnotationSerial]
		a := server.Annotations
		if caSerial == oldCA.Annotations[builder.AnnotationSerial] {
			return false, "no new authority yet"
		}
		if a[builder.AnnotationIssuer] != caSerial {
			return false, fmt.Sprintf("the servers' certificate is the old authority's; the bundle holds %s", a[builder.AnnotationTrusts])
		}
		presented := presentedSerials(t, ns, db, e.port, e.presented)
		for pod, p := range presented {
			if p != a[builder.AnnotationSerial] {
				return false, fmt.Sprintf("%s presents %s, the Secret holds %s", pod, p, a[builder.AnnotationSerial])
			}
		}
		if presentedAt == 0 {
			presentedAt = time.Since(deleted)
		}
		bundle, err := certs.ParseAll(creds.Data["ca.crt"])
		return err == nil && a[builder.AnnotationTrusts] == caSerial && len(bundle) == 1 && bundle[0].SerialNumber.Text(16) == caSerial,
			fmt.Sprintf("the bundle holds %s; the credentials' ca.crt %d certificates", a[builder.AnnotationTrusts], len(bundle))
	})
	t.Logf("Secret %s-ca deleted: the servers presented the new authority's certificate %s later, and the old authority was dropped %s later",
		db, presentedAt.Round(time.Second), time.Since(deleted).Round(time.Second))
	// A client's own copy of ca.crt comes to hold the new authority alone;
	// the writer connects with it ten times, then stops: the rotation is
	// over for a client. The kubelet writes the change into the writer's
	// volume at its next sync of the pod, about a minute later, or at once
	// when the pod changes, as the controller has it do for the servers
	// (README, TLS): the test annotates the writer's pod, as a client's
	// owner may, to spend that minute once (in the trust period) and not
	// twice.
	e2eutil.Kubectl(t, "-n", ns, "annotate", "--overwrite", "pod", w.pod, "dbcontroller.io/test-authority="+caSerial)
	e2eutil.Eventually(t, 3*converge, "the writer's mounted ca.crt to hold the new authority alone", func() (bool, string) {
		out, err := e2eutil.KubectlRun("", "-n", ns, "exec", w.pod, "--", "grep", "-c", "BEGIN CERTIFICATE", "/etc/db/ca.crt")
		return err == nil && strings.TrimSpace(string(out)) == "1", fmt.Sprintf("%v %s", err, out)
	})
	alone := float64(time.Now().UnixNano()) / 1e9
	t.Logf("the writer's ca.crt held the new authority alone %s after the delete", time.Since(deleted).Round(time.Second))
	e2eutil.Eventually(t, converge, "ten writes with the new authority alone", func() (bool, string) {
		out, err := e2eutil.KubectlRun("", "-n", ns, "logs", w.pod)
		if err != nil {
			return false, err.Error()
		}
		ws, n := parseWrites(t, string(out)), 0
		for k, at := range ws.at {
			if ws.ok[k] && at > alone {
				n++
			}
		}
		return n >= 10, fmt.Sprintf("%d acknowledged since", n)
	})
	w.stop(t)
	if after := podStarts(t, ns, db, e.container); !maps.Equal(after, pods) {
		t.Errorf("pods and their servers' starts %v, then %v: a rotation restarts nothing", pods, after)
	}
	writes := parseWrites(t, w.wait(t))
	writes.report(t, "a writer that verifies fully, across the rotation of the authority", nil, 20)
	if failed := len(writes.at) - len(writes.acked); failed > 0 {
		var why []string
		for k, ok := range writes.ok {
			if !ok {
				why = append(why, fmt.Sprintf("%.1f s after the delete: %s", writes.at[k]-float64(deleted.UnixNano())/1e9, writes.err[k]))
			}
		}
		// On one line: the suite's summary keeps a message's first line.
		t.Errorf("%d of the writer's %d connections failed across the rotation, want none: %s", failed, len(writes.at), strings.Join(why, " | "))
	}
	// It wrote across the switch, or it proves nothing of it.
	presented := float64(deleted.Add(presentedAt).UnixNano()) / 1e9
	if !slices.ContainsFunc(writes.at, func(at float64) bool { return at > presented+5 }) {
		t.Errorf("the writer's last write ended before the servers presented the new certificate (%.0f s after the delete): it did not write across the switch",
			presentedAt.Seconds())
	}
}

// presentedSerials is, by pod, the serial number of the certificate its
// server presents at port to a client of the credentials Secret, from
// this host, asked with the engine's presented (pgsql's or mysqlsql's).
func presentedSerials(t *testing.T, ns, db string, port int32, presented func(context.Context, string, int32, ha.Credentials) (string, error)) map[string]string {
	t.Helper()
	var creds corev1.Secret
	e2eutil.GetJSON(t, &creds, "-n", ns, "get", "secret", db+"-credentials")
	cred := ha.Credentials{User: string(creds.Data["username"]), Password: string(creds.Data["password"]), Authorities: string(creds.Data["ca.crt"])}
	var pods corev1.PodList
	e2eutil.GetJSON(t, &pods, "-n", ns, "get", "pods", "-l", "app.kubernetes.io/instance="+db)
	out := map[string]string{}
	for _, p := range pods.Items {
		serial, err := presented(context.Background(), p.Status.PodIP, port, cred)
		if err != nil {
			serial = "(" + err.Error() + ")"
		}
		out[p.Name] = serial
	}
	return out
}

// userCertificateSecret is the manifest of the user's Secret name (the
// shape cert-manager writes, labelled for the controller) holding a
// certificate ca signs for the names of Database db of namespace ns, and
// the certificate.
func userCertificateSecret(t *testing.T, name, db, ns string, ca certs.Issued) (string, *x509.Certificate) {
	t.Helper()
	server, err := certs.IssueServer(rand.Reader, ca, certs.ServerNames(db, db+"-ro", db+"-headless", ns, "cluster.local"), time.Now(), certs.ServerValidity)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := certs.Parse(server.CertPEM)
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
  labels: {dbcontroller.io/tls: "true"}
type: kubernetes.io/tls
data:
  tls.crt: %s
  tls.key: %s
  ca.crt: %s
`, name, b64(server.CertPEM), b64(server.KeyPEM), b64(ca.CertPEM)), leaf
}

// A PostgreSQL Database with the user's own certificate (spec.tls.secretName,
// as cert-manager writes it): the servers present it, and a client verifies
// them fully with the credentials Secret alone. A renewal (the Secret
// rewritten with a new certificate of the same authority) reaches every
// server with a reload, no restart. A rewrite that cannot serve (another
// certificate's key) changes nothing on the servers: status.tls.problem and
// a Warning say why, and the Database stays Running.
func TestPostgreSQLTLSFromTheUsersSecret(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	const db = "mine"
	ca, err := certs.NewAuthority(rand.Reader, "the user's authority", time.Now(), certs.AuthorityValidity)
	if err != nil {
		t.Fatal(err)
	}
	secret, leaf := userCertificateSecret(t, "mine-cert", db, ns, ca)
	e2eutil.KubectlIn(t, secret, "-n", ns, "apply", "-f", "-")
	e2eutil.KubectlIn(t, dbYAML(db, "postgresql", "15", postgresImage, 1)+"  tls:\n    secretName: mine-cert\n", "-n", ns, "create", "-f", "-")
	e2eutil.WaitRunning(t, ns, db, 3*converge)
	st := e2eutil.GetDB(t, ns, db).Status.TLS
	if st == nil || st.SuppliedBy != "mine-cert" || st.Problem != "" || st.RenewAt != nil {
		t.Errorf("status.tls %+v, want supplied by mine-cert, no renewal of the controller's, no problem", st)
	}
	if got := presentedSerials(t, ns, db, 5432, pgsql.Presented); got[db+"-0"] != leaf.SerialNumber.Text(16) {
		t.Errorf("presented %v, want the user's certificate %s", got, leaf.SerialNumber.Text(16))
	}
	// Its first client comes the moment the Database is Running: it waits
	// for kube-proxy to route the Service, as the psql helper does.
	if got := runTLSClient(t, ns, db, waitPostgreSQL+sessionTLS, ""); !strings.HasPrefix(got, "t") {
		t.Errorf("a verify-full client of the user's certificate: %q, want TLS", got)
	}

	// A renewal of the same authority: presented with no restart.
	starts := podStarts(t, ns, db, "postgresql")
	renewed, next := userCertificateSecret(t, "mine-cert", db, ns, ca)
	e2eutil.KubectlIn(t, renewed, "-n", ns, "apply", "-f", "-")
	written := time.Now()
	e2eutil.Eventually(t, 3*converge, "the renewed certificate presented", func() (bool, string) {
		got := presentedSerials(t, ns, db, 5432, pgsql.Presented)
		return got[db+"-0"] == next.SerialNumber.Text(16), fmt.Sprintf("presented %v", got)
	})
	t.Logf("the user's Secret renewed: the server presented the new certificate %s later", time.Since(written).Round(time.Second))
	// The controller had the kubelet write the renewal into the volume at
	// once, by annotating the pod (README, TLS).
	if got := e2eutil.Kubectl(t, "-n", ns, "get", "pod", db+"-0", "-o", `jsonpath={.metadata.annotations.dbcontroller\.io/certificate-serial}`); strings.TrimSpace(got) != next.SerialNumber.Text(16) {
		t.Errorf("pod %s-0 annotated with certificate serial %q, want the renewal's %s", db, got, next.SerialNumber.Text(16))
	}
	if after := podStarts(t, ns, db, "postgresql"); !maps.Equal(after, starts) {
		t.Errorf("pods and their servers' starts %v, then %v: a renewal restarts nothing", starts, after)
	}

	// Another certificate's key: refused, and said; the servers keep theirs.
	wrong, err := certs.NewAuthority(rand.Reader, "a stray key", time.Now(), certs.AuthorityValidity)
	if err != nil {
		t.Fatal(err)
	}
	e2eutil.Kubectl(t, "-n", ns, "patch", "secret", "mine-cert", "--type=merge", "-p",
		fmt.Sprintf(`{"data":{"tls.key":%q}}`, base64.StdEncoding.EncodeToString(wrong.KeyPEM)))
	e2eutil.Eventually(t, converge, "the problem said", func() (bool, string) {
		st := e2eutil.GetDB(t, ns, db).Status.TLS
		return st != nil && strings.Contains(st.Problem, "tls.key is not the key of tls.crt's certificate"), fmt.Sprintf("status.tls %+v", st)
	})
	t.Logf("a key that is not the certificate's: %s", e2eutil.GetDB(t, ns, db).Status.TLS.Problem)
	if !slices.ContainsFunc(dbEvents(t, ns, db), func(e string) bool { return strings.HasPrefix(e, "Warning TLSSecretInvalid ") }) {
		t.Errorf("events %q, want a Warning TLSSecretInvalid", dbEvents(t, ns, db))
	}
	if ok, msg := e2eutil.IsRunning(e2eutil.GetDB(t, ns, db)); !ok {
		t.Errorf("the Database is not Running with its servers' certificate kept: %s", msg)
	}
	if got := presentedSerials(t, ns, db, 5432, pgsql.Presented); got[db+"-0"] != next.SerialNumber.Text(16) {
		t.Errorf("presented %v, want the last certificate that could serve, %s", got, next.SerialNumber.Text(16))
	}
}

//go:build e2e

package e2e

import (
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

const converge = 90 * time.Second

func ownedBy(t *testing.T, obj metav1.Object, kind, name string) {
	t.Helper()
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != "Database" || ref.Name != name || ref.APIVersion != "dbcontroller.io/v1alpha1" {
		t.Errorf("%s %s: controller reference = %+v, want Database %s", kind, obj.GetName(), ref, name)
	}
}

func TestCreate(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})

	var names []string
	for _, f := range []string{"postgresql.yaml", "mysql.yaml", "mongodb.yaml"} {
		names = append(names, createFromExample(t, ns, f))
	}
	for _, name := range names {
		db := e2eutil.WaitRunning(t, ns, name, converge)
		if db.Status.Endpoint == "" || db.Status.CredentialsSecret != name+"-credentials" || db.Status.CurrentVersion != db.Spec.Version {
			t.Errorf("%s: status = %+v", name, db.Status)
		}
		var sts appsv1.StatefulSet
		e2eutil.GetJSON(t, &sts, "-n", ns, "get", "statefulset", name)
		ownedBy(t, &sts, "StatefulSet", name)
		for _, svc := range []string{name, name + "-headless"} {
			var s corev1.Service
			e2eutil.GetJSON(t, &s, "-n", ns, "get", "service", svc)
			ownedBy(t, &s, "Service", name)
		}
		var secret corev1.Secret
		e2eutil.GetJSON(t, &secret, "-n", ns, "get", "secret", name+"-credentials")
		ownedBy(t, &secret, "Secret", name)
		for _, k := range []string{"username", "password", "database", "host", "port", "uri"} {
			if len(secret.Data[k]) == 0 {
				t.Errorf("Secret %s has no %q", secret.Name, k)
			}
		}
	}
	out := e2eutil.Kubectl(t, "-n", ns, "get", "db")
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	if want := []string{"NAME", "ENGINE", "VERSION", "REPLICAS", "READY", "PHASE", "REASON", "AGE"}; strings.Join(header, " ") != strings.Join(want, " ") {
		t.Errorf("kubectl get db columns = %v, want %v", header, want)
	}
	if !strings.Contains(out, "postgresql") || !strings.Contains(out, "Running") || !strings.Contains(out, "AllReplicasReady") {
		t.Errorf("kubectl get db:\n%s", out)
	}
}

// TestScale scales a MySQL Database, whose replicas are independent
// servers: on kwok's fake nodes no server answers, and a replicated
// PostgreSQL Database is never Running without one (the real-node suite
// covers it).
func TestScale(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	createDB(t, ns, dbYAML("scaled", "mysql", "8.4", 1, ""))
	e2eutil.WaitRunning(t, ns, "scaled", converge)
	// A Secret made before MySQL replicated has no keys for the read-only
	// Service, and a password its user rotated.
	e2eutil.Kubectl(t, "-n", ns, "patch", "secret", "scaled-credentials", "--type=json", "-p",
		`[{"op":"remove","path":"/data/ro-host"},{"op":"remove","path":"/data/ro-uri"}]`)
	e2eutil.Kubectl(t, "-n", ns, "patch", "secret", "scaled-credentials", "-p", `{"stringData":{"password":"rotated-by-the-user"}}`)
	before := credentialKeys(t, ns, "scaled")

	// Three replicas of MySQL replicate, with a primary the controller
	// chooses by asking the servers over SQL: kwok's pods run no server,
	// so all three get ready and the Database says that it cannot reach
	// the first primary it chose at its address (the controller runs "in
	// the cluster" here: it dials directly). As root, local-up.sh routed
	// kwok's pod range unreachable: the dial fails at once, on this
	// machine. The real-node suite proves the replication.
	unrouted := "directly: dial tcp 10.0.1."
	if os.Geteuid() == 0 {
		unrouted = "connect: no route to host"
	}
	e2eutil.Kubectl(t, "-n", ns, "scale", "db/scaled", "--replicas=3")
	e2eutil.Eventually(t, 2*converge, "3 ready replicas, and no primary that answers", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, "scaled")
		ready, reason, msg := e2eutil.Condition(db, "Ready")
		return db.Status.Replicas == 3 && db.Status.ReadyReplicas == 3 && ready == "False" && reason == "ServersUnreachable" &&
				strings.Contains(msg, "the controller cannot reach scaled-0, which its kubelet reports ready") && strings.Contains(msg, unrouted),
			fmt.Sprintf("replicas %d, ready %d, Ready=%s/%s (%s)", db.Status.Replicas, db.Status.ReadyReplicas, ready, reason, msg)
	})
	// The Secret got the keys of the read-only Service, with the password
	// it holds, and no other key changed.
	want := map[string]string{"ro-host": "scaled-ro." + ns + ".svc",
		"ro-uri": "mysql://root:rotated-by-the-user@scaled-ro." + ns + ".svc:3306/scaled"}
	for k, v := range before {
		want[k] = v
	}
	if got := credentialKeys(t, ns, "scaled"); !maps.Equal(got, want) {
		t.Errorf("Secret scaled-credentials after scaling to 3:\n got %q\nwant %q", got, want)
	}
	var sts appsv1.StatefulSet
	e2eutil.GetJSON(t, &sts, "-n", ns, "get", "statefulset", "scaled")
	if *sts.Spec.Replicas != 3 {
		t.Errorf("StatefulSet replicas = %d, want 3", *sts.Spec.Replicas)
	}

	e2eutil.Kubectl(t, "-n", ns, "scale", "db/scaled", "--replicas=0")
	e2eutil.Eventually(t, converge, "phase Stopped", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, "scaled")
		ready, reason, _ := e2eutil.Condition(db, "Ready")
		return db.Status.Phase == "Stopped" && ready == "False" && reason == "Stopped", fmt.Sprintf("phase=%s Ready=%s/%s", db.Status.Phase, ready, reason)
	})
	var pvcs corev1.PersistentVolumeClaimList
	e2eutil.GetJSON(t, &pvcs, "-n", ns, "get", "pvc")
	if len(pvcs.Items) != 3 {
		t.Errorf("PVCs after scaling to 0: %d, want 3 kept", len(pvcs.Items))
	}
}

func TestDriftIsRepaired(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	createDB(t, ns, dbYAML("drift", "postgresql", "16", 1, ""))
	e2eutil.WaitRunning(t, ns, "drift", converge)
	password := secretPassword(t, ns, "drift")

	// Someone else's annotation must survive the repairs.
	e2eutil.Kubectl(t, "-n", ns, "annotate", "statefulset/drift", "team.example.com/owner=payments")
	e2eutil.Kubectl(t, "-n", ns, "scale", "statefulset/drift", "--replicas=4")
	e2eutil.Kubectl(t, "-n", ns, "set", "image", "statefulset/drift", "postgresql=postgres:9.6")
	// A field the controller's cache does not keep (builder.StripTemplates).
	e2eutil.Kubectl(t, "-n", ns, "patch", "statefulset/drift", "--type=json", "-p", `[{"op":"remove","path":"/spec/template/spec/containers/0/readinessProbe"}]`)
	e2eutil.Kubectl(t, "-n", ns, "delete", "service", "drift")

	e2eutil.Eventually(t, converge, "StatefulSet repaired", func() (bool, string) {
		var sts appsv1.StatefulSet
		e2eutil.GetJSON(t, &sts, "-n", ns, "get", "statefulset", "drift")
		c := sts.Spec.Template.Spec.Containers[0]
		return *sts.Spec.Replicas == 1 && c.Image == "postgres:16" && c.ReadinessProbe != nil,
			fmt.Sprintf("replicas=%d image=%s readinessProbe=%v", *sts.Spec.Replicas, c.Image, c.ReadinessProbe != nil)
	})
	e2eutil.Eventually(t, converge, "client Service recreated", func() (bool, string) {
		out, err := e2eutil.KubectlRun("", "-n", ns, "get", "service", "drift", "-o", "name")
		return err == nil, string(out)
	})
	var sts appsv1.StatefulSet
	e2eutil.GetJSON(t, &sts, "-n", ns, "get", "statefulset", "drift")
	if sts.Annotations["team.example.com/owner"] != "payments" {
		t.Errorf("annotation set by someone else was lost: %v", sts.Annotations)
	}
	e2eutil.WaitRunning(t, ns, "drift", converge)
	if got := secretPassword(t, ns, "drift"); got != password {
		t.Errorf("password changed across drift repairs")
	}
}

// objectStoreYAML is a spec.backup with an object store at endpoint, with
// extra fields of objectStore.
func objectStoreYAML(endpoint, extra string) string {
	return "  backup:\n    objectStore:\n      endpoint: " + endpoint + "\n      bucket: backups\n      credentialsSecret: {name: store}\n" + extra
}

func TestInvalidSpecsAreRejectedByTheAPIServer(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	createDB(t, ns, dbYAML("valid", "postgresql", "16", 1, "  storage:\n    size: 2Gi\n"))
	createDB(t, ns, dbYAML("one-mongo", "mongodb", "7.0", 1, ""))
	createDB(t, ns, dbYAML("mongo-unmonitored", "mongodb", "7.0", 1, "  monitoring:\n    enabled: false\n"))
	createDB(t, ns, dbYAML("chosen", "postgresql", "16", 3, "  replication:\n    primary: chosen-2\n"))
	createDB(t, ns, dbYAML("restoring", "postgresql", "16", 1, "  restore:\n    database: orders\n    targetLSN: 0/3000060\n"))
	createDB(t, ns, dbYAML("stored", "postgresql", "16", 1,
		objectStoreYAML("https://s3.example:9000", "      prefix: team-a/prod.v2\n      region: eu-west-1\n      ca: {name: store-ca}\n    continuous: {}\n    verifyRestore: true\n")))
	if got := e2eutil.Kubectl(t, "-n", ns, "get", "db", "stored", "-o", "jsonpath={.spec.backup.continuous.archiveTimeoutSeconds}"); got != "300" {
		t.Errorf("archiveTimeoutSeconds defaults to %q, want 300", got)
	}
	tests := []struct {
		name    string
		args    []string
		stdin   string
		wantErr string
	}{
		{name: "unknown engine", args: []string{"create", "-f", "-"},
			stdin: dbYAML("bad-engine", "oracle", "19", 1, ""), wantErr: `spec.engine: Unsupported value: "oracle"`},
		{name: "replicas 11", args: []string{"create", "-f", "-"},
			stdin: dbYAML("too-many", "postgresql", "16", 11, ""), wantErr: "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"},
		{name: "malformed version", args: []string{"create", "-f", "-"},
			stdin: dbYAML("bad-version", "postgresql", "sixteen", 1, ""), wantErr: "spec.version in body should match"},
		{name: "name too long for the children", args: []string{"create", "-f", "-"},
			stdin: dbYAML(strings.Repeat("a", 53), "postgresql", "16", 1, ""), wantErr: "metadata.name must be a DNS-1035 label of at most 52 characters"},
		{name: "storage shrink", args: []string{"patch", "db/valid", "--type=merge", "-p", `{"spec":{"storage":{"size":"1Gi"}}}`},
			wantErr: "storage.size may grow but never shrink"},
		{name: "engine change", args: []string{"patch", "db/valid", "--type=merge", "-p", `{"spec":{"engine":"mysql","version":"8.4"}}`},
			wantErr: "engine is immutable"},
		{name: "storage class change", args: []string{"patch", "db/valid", "--type=merge", "-p", `{"spec":{"storage":{"storageClassName":"fast"}}}`},
			wantErr: "storageClassName is immutable"},
		{name: "MongoDB with 3 replicas", args: []string{"create", "-f", "-"},
			stdin: dbYAML("three-mongos", "mongodb", "7.0", 3, ""), wantErr: "replicas above 1 are refused for MongoDB"},
		{name: "MongoDB scaled to 2", args: []string{"scale", "db/one-mongo", "--replicas=2"},
			wantErr: "replicas above 1 are refused for MongoDB"},
		{name: "a primary beyond the replicas", args: []string{"create", "-f", "-"},
			stdin: dbYAML("beyond", "postgresql", "16", 3, "  replication:\n    primary: beyond-7\n"), wantErr: "spec.replication.primary must be one of the pods spec.replicas asks for"},
		{name: "scaled below the chosen primary", args: []string{"scale", "db/chosen", "--replicas=2"},
			wantErr: "spec.replication.primary must be one of the pods spec.replicas asks for"},
		{name: "an object store endpoint with a path", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("store-path", "postgresql", "16", 1, objectStoreYAML("https://s3.example/backups", "")),
			wantErr: "spec.backup.objectStore.endpoint in body should match"},
		{name: "an object store prefix that climbs out", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("store-climb", "postgresql", "16", 1, objectStoreYAML("https://s3.example", "      prefix: team-a/../team-b\n")),
			wantErr: "spec.backup.objectStore.prefix in body should match"},
		{name: "continuous archiving without an object store", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("archive-nowhere", "postgresql", "16", 1, "  backup:\n    continuous: {}\n"),
			wantErr: "backup.continuous archives to backup.objectStore, which is not set"},
		{name: "restores verified without an archive", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("verify-nothing", "postgresql", "16", 1, objectStoreYAML("https://s3.example", "    verifyRestore: true\n")),
			wantErr: "backup.verifyRestore restores base backups with the archived WAL: it needs backup.continuous"},
		{name: "continuous archiving of MySQL", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("archive-mysql", "mysql", "8.4", 1, objectStoreYAML("https://s3.example", "    continuous: {}\n")),
			wantErr: "spec.backup.continuous is for PostgreSQL"},
		{name: "an object store CA for an http endpoint", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("store-ca", "postgresql", "16", 1, objectStoreYAML("http://10.0.0.1:7070", "      ca: {name: store-ca}\n")),
			wantErr: "objectStore.ca is only for an https:// endpoint"},
		{name: "a certificate Secret the controller writes", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("own-cert", "postgresql", "16", 1, "  tls:\n    secretName: own-cert-tls\n"),
			wantErr: "spec.tls.secretName may not name a Secret the controller writes for this Database"},
		{name: "a certificate Secret without TLS", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("no-tls-cert", "mysql", "8.4", 1, "  tls:\n    mode: Disabled\n    secretName: shop-cert\n"),
			wantErr: "spec.tls.secretName needs TLS"},
		{name: "a certificate Secret of no valid name", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("bad-cert-name", "postgresql", "16", 1, "  tls:\n    secretName: Shop_Cert\n"),
			wantErr: "spec.tls.secretName in body should match"},
		{name: "a MongoDB exporter", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("mongo-exporter", "mongodb", "7.0", 1, "  monitoring:\n    enabled: true\n"),
			wantErr: "spec.monitoring is for PostgreSQL and MySQL"},
		{name: "custom queries for mysqld_exporter", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("mysql-queries", "mysql", "8.4", 1, "  monitoring:\n    enabled: true\n    queries:\n      configMapName: shop-queries\n"),
			wantErr: "spec.monitoring.queries is for PostgreSQL"},
		{name: "custom queries of a ConfigMap of no valid name", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("bad-queries", "postgresql", "16", 1, "  monitoring:\n    enabled: true\n    queries:\n      configMapName: Shop_Queries\n"),
			wantErr: "spec.monitoring.queries.configMapName in body should match"},
		{name: "an exporter image of no valid reference", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("bad-exporter", "postgresql", "16", 1, "  monitoring:\n    enabled: true\n    image: Exporter:latest\n"),
			wantErr: "spec.monitoring.image in body should match"},
		{name: "a restore of a backup and of a Database", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("restore-both", "postgresql", "16", 1, "  restore:\n    backup: nightly\n    database: orders\n"),
			wantErr: "spec.restore names one of backup and database"},
		{name: "a restore of nothing", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("restore-none", "postgresql", "16", 1, "  restore:\n    targetLSN: 0/3000060\n"),
			wantErr: "spec.restore names one of backup and database"},
		{name: "a restore to a time and a position", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("restore-two", "postgresql", "16", 1, "  restore:\n    database: orders\n    targetTime: 2026-11-26T10:00:00Z\n    targetLSN: 0/3000060\n"),
			wantErr: "spec.restore sets at most one of targetTime and targetLSN"},
		{name: "a restore to a position that is none", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("restore-lsn", "postgresql", "16", 1, "  restore:\n    database: orders\n    targetLSN: \"3000060\"\n"),
			wantErr: "spec.restore.targetLSN in body should match"},
		{name: "a restore to a time that is none", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("restore-time", "postgresql", "16", 1, "  restore:\n    database: orders\n    targetTime: yesterday\n"),
			wantErr: "spec.restore.targetTime"},
		{name: "a restore changed", args: []string{"patch", "db/restoring", "--type=merge", "-p", `{"spec":{"restore":{"targetLSN":"0/4000000"}}}`},
			wantErr: "spec.restore is immutable"},
		{name: "a recovery window of no day", args: []string{"create", "-f", "-"},
			stdin:   dbYAML("window-0", "postgresql", "16", 1, "  backup:\n    recoveryWindowDays: 0\n"),
			wantErr: "spec.backup.recoveryWindowDays in body should be greater than or equal to 1"},
		{name: "a backup of an unknown method", args: []string{"create", "-f", "-"},
			stdin:   "apiVersion: dbcontroller.io/v1alpha1\nkind: DatabaseBackup\nmetadata:\n  name: by-hand\nspec:\n  database: valid\n  method: Snapshot\n",
			wantErr: `spec.method: Unsupported value: "Snapshot"`},
	}
	for _, tt := range tests {
		out, err := e2eutil.KubectlRun(tt.stdin, append([]string{"-n", ns}, tt.args...)...)
		if err == nil {
			t.Errorf("%s: accepted, want rejected with %q", tt.name, tt.wantErr)
			continue
		}
		if !strings.Contains(string(out), tt.wantErr) {
			t.Errorf("%s: error %q, want it to contain %q", tt.name, strings.TrimSpace(string(out)), tt.wantErr)
		}
	}
	// What the rules allow: a replicated Database stopped with its primary
	// chosen (it stays the primary for when they start again), and MongoDB
	// stopped.
	for _, args := range [][]string{{"scale", "db/chosen", "--replicas=0"}, {"scale", "db/one-mongo", "--replicas=0"}} {
		if out, err := e2eutil.KubectlRun("", append([]string{"-n", ns}, args...)...); err != nil {
			t.Errorf("%v: refused, want accepted: %s", args, out)
		}
	}
}

func TestUnknownVersionAndDowngrade(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})

	// Unknown version: a condition and a Warning event, nothing created.
	createDB(t, ns, dbYAML("unknown", "postgresql", "9", 1, ""))
	db := waitCondition(t, ns, "unknown", "Ready", "False", "UnknownVersion", converge)
	if db.Status.Phase != "Failed" {
		t.Errorf("phase = %s, want Failed", db.Status.Phase)
	}
	waitEvent(t, ns, "unknown", "Warning UnknownVersion", converge)
	for _, kind := range []string{"statefulset/unknown", "service/unknown", "secret/unknown-credentials"} {
		if out, err := e2eutil.KubectlRun("", "-n", ns, "get", kind); err == nil {
			t.Errorf("%s exists for a Database with an unknown version:\n%s", kind, out)
		}
	}

	// Downgrade of a running database: refused, the StatefulSet is untouched.
	createDB(t, ns, dbYAML("down", "postgresql", "16", 1, ""))
	e2eutil.WaitRunning(t, ns, "down", converge)
	var before appsv1.StatefulSet
	e2eutil.GetJSON(t, &before, "-n", ns, "get", "statefulset", "down")
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/down", "--type=merge", "-p", `{"spec":{"version":"15"}}`)
	db = waitCondition(t, ns, "down", "Ready", "False", "DowngradeRefused", converge)
	if db.Status.CurrentVersion != "16" {
		t.Errorf("currentVersion = %q, want 16", db.Status.CurrentVersion)
	}
	waitEvent(t, ns, "down", "Warning DowngradeRefused", converge)
	var after appsv1.StatefulSet
	e2eutil.GetJSON(t, &after, "-n", ns, "get", "statefulset", "down")
	if after.Generation != before.Generation || after.Spec.Template.Spec.Containers[0].Image != "postgres:16" {
		t.Errorf("StatefulSet touched on a refused downgrade: image %s, generation %d -> %d",
			after.Spec.Template.Spec.Containers[0].Image, before.Generation, after.Generation)
	}
	// Setting the version back recovers.
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/down", "--type=merge", "-p", `{"spec":{"version":"16"}}`)
	e2eutil.WaitRunning(t, ns, "down", converge)
}

func TestForeignObjectIsLeftUntouched(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	foreign := `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: taken
spec:
  replicas: 1
  serviceName: taken
  selector:
    matchLabels: {app: someone-else}
  template:
    metadata:
      labels: {app: someone-else}
    spec:
      containers:
      - name: app
        image: nginx:1.27
`
	e2eutil.KubectlIn(t, foreign, "-n", ns, "create", "-f", "-")
	var before appsv1.StatefulSet
	e2eutil.GetJSON(t, &before, "-n", ns, "get", "statefulset", "taken")

	createDB(t, ns, dbYAML("taken", "postgresql", "16", 1, ""))
	_, _, msg := e2eutil.Condition(waitCondition(t, ns, "taken", "Ready", "False", "ResourceConflict", converge), "Ready")
	if !strings.Contains(msg, "StatefulSet "+ns+"/taken already exists") {
		t.Errorf("condition message = %q", msg)
	}
	waitEvent(t, ns, "taken", "Warning ResourceConflict", converge)

	// Its status moves (the StatefulSet controller runs its pods), but
	// nothing of ours may be on it.
	var after appsv1.StatefulSet
	e2eutil.GetJSON(t, &after, "-n", ns, "get", "statefulset", "taken", "--show-managed-fields")
	if after.Generation != before.Generation || len(after.OwnerReferences) != 0 || len(after.Labels) != 0 {
		t.Errorf("foreign StatefulSet was changed: generation %d -> %d, owners %v, labels %v",
			before.Generation, after.Generation, after.OwnerReferences, after.Labels)
	}
	for _, mf := range after.ManagedFields {
		if mf.Manager == "database-controller" {
			t.Errorf("the controller wrote to the foreign StatefulSet: %+v", mf)
		}
	}
}

func TestDeleteGarbageCollectsAndHonoursDeletionPolicy(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	createDB(t, ns, dbYAML("keep", "postgresql", "16", 1, "  deletionPolicy: Retain\n"))
	createDB(t, ns, dbYAML("drop", "mysql", "8.4", 1, "  deletionPolicy: Delete\n"))
	e2eutil.WaitRunning(t, ns, "keep", converge)
	e2eutil.WaitRunning(t, ns, "drop", converge)

	e2eutil.Kubectl(t, "-n", ns, "delete", "db", "keep", "drop")
	// Under Retain the credentials Secret stays with the volumes (and a
	// Database made again with the name adopts it); under Delete it goes.
	for name, kinds := range map[string]string{"keep": "statefulset,service,pod", "drop": "statefulset,service,secret,pod"} {
		e2eutil.Eventually(t, 2*converge, "children of "+name+" to be collected", func() (bool, string) {
			out, _ := e2eutil.KubectlRun("", "-n", ns, "get", kinds, "-l", "app.kubernetes.io/instance="+name, "-o", "name")
			return strings.TrimSpace(string(out)) == "", string(out)
		})
	}
	var kept corev1.Secret
	e2eutil.GetJSON(t, &kept, "-n", ns, "get", "secret", "keep-credentials")
	if len(kept.OwnerReferences) != 0 {
		t.Errorf("the kept Secret still has owners %v", kept.OwnerReferences)
	}
	e2eutil.Eventually(t, 2*converge, "PVC of the Delete policy to go", func() (bool, string) {
		out, _ := e2eutil.KubectlRun("", "-n", ns, "get", "pvc", "data-drop-0", "-o", "name")
		return strings.Contains(string(out), "NotFound"), string(out)
	})
	if out, err := e2eutil.KubectlRun("", "-n", ns, "get", "pvc", "data-keep-0", "-o", "name"); err != nil {
		t.Errorf("PVC of the Retain policy is gone: %s", out)
	}
}

func secretPassword(t *testing.T, ns, name string) string {
	t.Helper()
	out := e2eutil.Kubectl(t, "-n", ns, "get", "secret", name+"-credentials", "-o", "jsonpath={.data.password}")
	b, err := base64.StdEncoding.DecodeString(out)
	if err != nil || len(b) == 0 {
		t.Fatalf("password of %s: %q %v", name, out, err)
	}
	return string(b)
}

// credentialKeys are the keys of the Database name's credentials Secret.
func credentialKeys(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	var secret corev1.Secret
	e2eutil.GetJSON(t, &secret, "-n", ns, "get", "secret", name+"-credentials")
	data := map[string]string{}
	for k, v := range secret.Data {
		data[k] = string(v)
	}
	return data
}

func TestCredentialsAreStable(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	c := startController(t, controllerOptions{namespace: ns})
	createDB(t, ns, dbYAML("creds", "mongodb", "7.0", 1, ""))
	e2eutil.WaitRunning(t, ns, "creds", converge)
	password := secretPassword(t, ns, "creds")

	// A controller restart.
	c.stop()
	startController(t, controllerOptions{namespace: ns})
	// A spec update (MongoDB takes one replica at most: the resources
	// change the pods instead) and a drift repair.
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/creds", "--type=merge", "-p", `{"spec":{"version":"8.0","resources":{"requests":{"cpu":"100m"}}}}`)
	e2eutil.WaitRunning(t, ns, "creds", 2*converge)
	e2eutil.Kubectl(t, "-n", ns, "delete", "service", "creds-headless")
	e2eutil.Eventually(t, converge, "headless Service recreated", func() (bool, string) {
		out, err := e2eutil.KubectlRun("", "-n", ns, "get", "service", "creds-headless", "-o", "name")
		return err == nil, string(out)
	})
	if got := secretPassword(t, ns, "creds"); got != password {
		t.Fatalf("password changed")
	}

	// A password the user rotated is kept.
	e2eutil.Kubectl(t, "-n", ns, "patch", "secret", "creds-credentials", "-p", `{"stringData":{"password":"rotated-by-the-user"}}`)
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/creds", "--type=merge", "-p", `{"spec":{"resources":{"requests":{"cpu":"200m"}}}}`)
	e2eutil.WaitRunning(t, ns, "creds", converge)
	if got := secretPassword(t, ns, "creds"); got != "rotated-by-the-user" {
		t.Fatalf("rotated password was overwritten")
	}
}

// TestRestartWhileCreating kills the controller (SIGKILL) while it is still
// creating the children of a batch of Databases, and checks that a new
// process finishes the job from whatever the first one left behind: every
// Database Running, no duplicate or missing child, no error.
func TestRestartWhileCreating(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	const n = 20
	var b strings.Builder
	engines := []struct{ engine, version string }{{"postgresql", "16"}, {"mysql", "8.4"}, {"mongodb", "7.0"}}
	for i := range n {
		e := engines[i%len(engines)]
		b.WriteString("---\n" + dbYAML(fmt.Sprintf("db-%02d", i), e.engine, e.version, 1, ""))
	}
	// The first controller may make 2 requests a second: the children of
	// n Databases (a Secret, two Services and a StatefulSet each) then take
	// it over 40 seconds, so the kill below lands with creates in flight.
	first := startController(t, controllerOptions{namespace: ns, args: []string{"--kube-api-qps=2", "--kube-api-burst=2"}})
	e2eutil.KubectlIn(t, b.String(), "-n", ns, "create", "-f", "-")
	// Kill as soon as the first StatefulSet exists.
	e2eutil.Eventually(t, converge, "the first StatefulSet", func() (bool, string) {
		out, _ := e2eutil.KubectlRun("", "-n", ns, "get", "statefulset", "-l", managedBy, "-o", "name")
		got := len(strings.Fields(string(out)))
		return got >= 1, fmt.Sprintf("%d StatefulSets", got)
	})
	first.kill()

	// The dead process creates nothing more: this is how far it got.
	atKill := children(t, ns)
	t.Logf("at the SIGKILL: %d of %d StatefulSets, %d of %d Services, %d Secrets existed",
		atKill["statefulset"], n, atKill["service"], 2*n, atKill["secret"])
	if atKill["statefulset"] < 1 || atKill["statefulset"] >= n {
		t.Fatalf("the SIGKILL did not land while the first controller was creating: %d of %d StatefulSets existed", atKill["statefulset"], n)
	}

	second := startController(t, controllerOptions{namespace: ns})
	e2eutil.Eventually(t, 3*converge, fmt.Sprintf("all %d Databases to be Running", n), func() (bool, string) {
		var list dbv1alpha1.DatabaseList
		e2eutil.GetJSON(t, &list, "-n", ns, "get", "databases")
		var waiting []string
		for i := range list.Items {
			if ok, why := e2eutil.IsRunning(&list.Items[i]); !ok {
				waiting = append(waiting, list.Items[i].Name+": "+why)
			}
		}
		return len(list.Items) == n && len(waiting) == 0, fmt.Sprintf("%d Databases, not yet Running: %q", len(list.Items), waiting)
	})

	// Each Database has two more Secrets, for TLS (on by default): its
	// authority's and its servers' certificate's.
	withTLS := n
	counts := children(t, ns)
	if counts["statefulset"] != n || counts["service"] != 2*n || counts["secret"] != n+2*withTLS {
		t.Errorf("children after restart = %v, want %d StatefulSets, %d Services, %d Secrets", counts, n, 2*n, n+2*withTLS)
	}
	var evs []string
	for i := range n {
		for _, e := range events(t, ns, fmt.Sprintf("db-%02d", i)) {
			if strings.HasPrefix(e, "Warning") {
				evs = append(evs, e)
			}
		}
	}
	if len(evs) > 0 {
		t.Errorf("Warning events after the restart: %q", evs)
	}
	second.expectNoFailedSyncs()
	// The cache keeps a StatefulSet without most of its spec. The first
	// controller's say which generation of their spec it wrote, still
	// theirs: the second compares them with no read (and those it made,
	// with their creates' answers).
	if n := sum(second.metrics(), "rest_client_requests_by_resource_total", `resource="statefulsets"`, `verb="GET"`); n != 0 {
		t.Errorf("the restarted controller read %v StatefulSets from the API server, want none", n)
	}
}

// A controller started over settled Databases takes them over with no
// read of any child: their StatefulSets say which generation the last
// controller wrote, and their credentials Secrets, whose data the cache
// does not hold, come from one LIST made before the first passes, not one
// GET each. It writes nothing either: nothing changed.
func TestRestartOverSettledDatabases(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	const n = 6
	var b strings.Builder
	engines := []struct{ engine, version string }{{"postgresql", "16"}, {"mysql", "8.4"}}
	for i := range n {
		e := engines[i%len(engines)]
		b.WriteString("---\n" + dbYAML(fmt.Sprintf("db-%02d", i), e.engine, e.version, 1, ""))
	}
	first := startController(t, controllerOptions{namespace: ns})
	e2eutil.KubectlIn(t, b.String(), "-n", ns, "create", "-f", "-")
	for i := range n {
		e2eutil.WaitRunning(t, ns, fmt.Sprintf("db-%02d", i), converge)
	}
	first.stop()

	second := startController(t, controllerOptions{namespace: ns})
	e2eutil.Eventually(t, converge, "a first pass over every Database", func() (bool, string) {
		m := second.metrics()
		passes, depth := sum(m, "database_controller_reconcile_total"), sum(m, "workqueue_depth")
		return passes >= n && depth == 0, fmt.Sprintf("%v passes, %v queued", passes, depth)
	})
	// The metric's verb is the HTTP method: a LIST is a GET too.
	m := second.metrics()
	if got := sum(m, "rest_client_requests_by_resource_total", `resource="statefulsets"`, `verb="GET"`); got != 0 {
		t.Errorf("the restarted controller read %v StatefulSets, want none; requests by resource:\n%s", got, byResource(m))
	}
	if got := sum(m, "rest_client_requests_by_resource_total", `resource="secrets"`, `verb="GET"`); got != 1 {
		t.Errorf("the restarted controller read Secrets in %v requests, want 1 (the LIST), not one per Database (%d); requests by resource:\n%s",
			got, n, byResource(m))
	}
	if w := writes(m); w != 0 {
		t.Errorf("the restarted controller made %v writes over settled Databases, want none; requests by resource:\n%s", w, byResource(m))
	}
	second.expectNoFailedSyncs()
}

// managedBy selects the children the controller labels as its own.
const managedBy = "app.kubernetes.io/managed-by=database-controller"

// children counts the controller's StatefulSets, Services and Secrets in ns.
func children(t *testing.T, ns string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, kind := range []string{"statefulset", "service", "secret"} {
		out := e2eutil.Kubectl(t, "-n", ns, "get", kind, "-l", managedBy, "-o", "name")
		counts[kind] = len(strings.Fields(out))
	}
	return counts
}

func TestSteadyStateMakesNoWrites(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	const resync = 10 * time.Second
	c := startController(t, controllerOptions{namespace: ns, args: []string{"--resync-period=" + resync.String()}})
	for _, f := range []string{"postgresql.yaml", "mysql.yaml", "mongodb.yaml"} {
		createFromExample(t, ns, f)
	}
	for _, name := range []string{"orders", "inventory", "sessions"} {
		e2eutil.WaitRunning(t, ns, name, converge)
	}
	// Stuck Databases cost nothing either: one blocked by a foreign
	// Service, one whose volume the cluster refuses to grow.
	e2eutil.KubectlIn(t, "apiVersion: v1\nkind: Service\nmetadata:\n  name: blocked\nspec:\n  ports:\n  - port: 80\n", "-n", ns, "create", "-f", "-")
	createDB(t, ns, dbYAML("blocked", "postgresql", "16", 1, ""))
	createDB(t, ns, dbYAML("fixed", "mysql", "8.4", 1, "  storage:\n    size: 1Gi\n"))
	e2eutil.WaitRunning(t, ns, "fixed", converge)
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/fixed", "--type=merge", "-p", `{"spec":{"storage":{"size":"3Gi"}}}`)
	waitCondition(t, ns, "blocked", "Ready", "False", "ResourceConflict", converge)
	waitCondition(t, ns, "fixed", "Ready", "False", "StorageResizeFailed", converge)
	// Nor do backups once finished, a schedule not yet due, and a Database
	// restored from a backup.
	createDB(t, ns, dbYAML("saved", "postgresql", "16", 1, "  backup:\n    schedule: \"0 0 1 1 *\"\n"))
	e2eutil.WaitRunning(t, ns, "saved", converge)
	e2eutil.KubectlIn(t, backupYAML("saved-now", "saved"), "-n", ns, "create", "-f", "-")
	waitBackupPhase(t, ns, "saved-now", "Completed", converge)
	createDB(t, ns, dbYAML("copy", "postgresql", "16", 1, "  restore:\n    backup: saved-now\n"))
	e2eutil.WaitRunning(t, ns, "copy", converge)
	// Let the last status writes and events land, then measure.
	e2eutil.Eventually(t, converge, "writes to settle", func() (bool, string) {
		a := writes(c.metrics())
		time.Sleep(2 * time.Second)
		b := writes(c.metrics())
		return a == b, fmt.Sprintf("writes %v -> %v", a, b)
	})
	before := c.metrics()
	// Over more than one resync period every Database is synced again.
	e2eutil.Eventually(t, 3*resync, "a resync of every Database", func() (bool, string) {
		now := c.metrics()
		synced := sum(now, "database_controller_reconcile_total") - sum(before, "database_controller_reconcile_total")
		return synced >= 5, fmt.Sprintf("%v syncs since the baseline", synced)
	})
	time.Sleep(resync) // a further full period
	after := c.metrics()
	if w := writes(after) - writes(before); w != 0 {
		t.Errorf("steady state made %v write requests over a resync period; requests by resource now:\n%s", w, byResource(after))
	}
	t.Logf("steady state: %v syncs, 0 writes", sum(after, "database_controller_reconcile_total")-sum(before, "database_controller_reconcile_total"))
}

func byResource(m map[string]float64) string {
	var lines []string
	for k, v := range m {
		if strings.HasPrefix(k, "rest_client_requests_by_resource_total") {
			lines = append(lines, fmt.Sprintf("%s %v", k, v))
		}
	}
	return strings.Join(lines, "\n")
}

// TestStorageGrowth grows the volumes on a class that allows expansion, and
// reports the refusal on one that does not (kwok-volume, the default).
func TestStorageGrowth(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	// hack/local-up.sh installs kwok-expandable, which kwok provisions and
	// which allows volume expansion. One replica: a replicated Database
	// needs servers that answer SQL, which kwok's pods do not (see
	// TestScale).
	class := "kwok-expandable"
	createDB(t, ns, dbYAML("grows", "mysql", "8.4", 1, "  storage:\n    size: 1Gi\n    storageClassName: "+class+"\n"))
	createDB(t, ns, dbYAML("fixed", "postgresql", "16", 1, "  storage:\n    size: 1Gi\n"))
	e2eutil.WaitRunning(t, ns, "grows", converge)
	e2eutil.WaitRunning(t, ns, "fixed", converge)

	e2eutil.Kubectl(t, "-n", ns, "patch", "db/grows", "--type=merge", "-p", `{"spec":{"storage":{"size":"3Gi"}}}`)
	for _, pvc := range []string{"data-grows-0"} {
		e2eutil.Eventually(t, converge, pvc+" to request 3Gi", func() (bool, string) {
			out, _ := e2eutil.KubectlRun("", "-n", ns, "get", "pvc", pvc, "-o", "jsonpath={.spec.resources.requests.storage}")
			return string(out) == "3Gi", string(out)
		})
	}
	e2eutil.WaitRunning(t, ns, "grows", converge)

	e2eutil.Kubectl(t, "-n", ns, "patch", "db/fixed", "--type=merge", "-p", `{"spec":{"storage":{"size":"3Gi"}}}`)
	_, _, msg := e2eutil.Condition(waitCondition(t, ns, "fixed", "Ready", "False", "StorageResizeFailed", converge), "Ready")
	if !strings.Contains(msg, "data-fixed-0 from 1Gi to 3Gi") {
		t.Errorf("condition message = %q", msg)
	}
	waitEvent(t, ns, "fixed", "Warning StorageResizeFailed", converge)
}

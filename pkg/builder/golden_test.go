package builder

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the builders' output")

// TestStatefulSetGolden renders each engine's StatefulSet and compares it
// with testdata/statefulset-<engine>.golden.yaml, so that a reviewer sees
// every change to what runs in a pod. After an intended change, run
// `go test ./pkg/builder -run Golden -update` and review the diff.
func TestStatefulSetGolden(t *testing.T) {
	for _, tc := range engineCases {
		t.Run(string(tc.engine), func(t *testing.T) {
			db := newDatabase(tc.engine, tc.version)
			db.Spec.Replicas = ptr.To[int32](3)
			db.Spec.DeletionPolicy = dbv1alpha1.DeletionPolicyDelete
			db.Spec.Storage.StorageClassName = ptr.To("fast")
			db.Spec.Resources = &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
			}
			e := lookup(t, tc.engine)
			image, err := e.Image(tc.version, "")
			if err != nil {
				t.Fatal(err)
			}
			got, err := yaml.Marshal(NewStatefulSet(db, e, image, StorageOf(db), nil, false))
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, filepath.Join("testdata", "statefulset-"+string(tc.engine)+".golden.yaml"), got)
		})
	}
}

// TestReplicatedGolden renders a replicated PostgreSQL Database's
// StatefulSet (its init container and script, the server's arguments,
// OnDelete), alone and restoring a backup, and its read-only Service; and
// a replicated MySQL Database's StatefulSet (its preStop too).
func TestReplicatedGolden(t *testing.T) {
	db := newDatabase(dbv1alpha1.EnginePostgreSQL, "16")
	db.Spec.Replicas = ptr.To[int32](3)
	e := lookup(t, db.Spec.Engine)
	my := newDatabase(dbv1alpha1.EngineMySQL, "8.4")
	my.Spec.Replicas = ptr.To[int32](3)
	src := &RestoreSource{Backup: "orders-202611220300", Path: "orders-202611220300.pgdump", Claim: "orders-backups", SourceDatabase: "orders"}
	for name, ac := range map[string]any{
		"statefulset-replicated-postgresql":         NewStatefulSet(db, e, "postgres:16", StorageOf(db), nil, true),
		"statefulset-replicated-restore-postgresql": NewStatefulSet(db, e, "postgres:16", StorageOf(db), src, true),
		"service-read-only-postgresql":              NewReadOnlyService(db, e),
		"statefulset-replicated-mysql":              NewStatefulSet(my, lookup(t, my.Spec.Engine), "mysql:8.4", StorageOf(my), nil, true),
		"disruption-budgets":                        NewDisruptionBudgets(db, false),
		"disruption-budgets-stranded":               NewDisruptionBudgets(db, true),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := yaml.Marshal(ac)
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, filepath.Join("testdata", name+".golden.yaml"), got)
		})
	}
}

// TestFeatureCompatibilityJobGolden renders the Job that sets MongoDB's
// featureCompatibilityVersion after an upgrade.
func TestFeatureCompatibilityJobGolden(t *testing.T) {
	db := newDatabase(dbv1alpha1.EngineMongoDB, "7.0")
	got, err := yaml.Marshal(NewFeatureCompatibilityJob(db, lookup(t, db.Spec.Engine), "mongo:7.0", "7.0", 3))
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, filepath.Join("testdata", "job-feature-compatibility.golden.yaml"), got)
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("the rendered object differs from %s (run with -update after an intended change):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func backupOf(db *dbv1alpha1.Database, name string) *dbv1alpha1.DatabaseBackup {
	return &dbv1alpha1.DatabaseBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: db.Namespace, UID: "backup-uid"},
		Spec:       dbv1alpha1.DatabaseBackupSpec{Database: db.Name},
	}
}

// TestBackupGolden renders, per engine, the Job that takes a backup and a
// StatefulSet that restores one; and the backup volume's claim and the
// Job that deletes a backup's file.
func TestBackupGolden(t *testing.T) {
	for _, tc := range engineCases {
		t.Run(string(tc.engine), func(t *testing.T) {
			db := newDatabase(tc.engine, tc.version)
			e := lookup(t, tc.engine)
			image, err := e.Image(tc.version, "")
			if err != nil {
				t.Fatal(err)
			}
			job, err := yaml.Marshal(NewBackupJob(backupOf(db, "nightly"), db, e, image))
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, filepath.Join("testdata", "job-backup-"+string(tc.engine)+".golden.yaml"), job)
			src := &RestoreSource{Backup: "nightly", Claim: "source-backups", Path: "nightly." + e.Runtime().Backup.Extension, SourceDatabase: "source"}
			sts, err := yaml.Marshal(NewStatefulSet(db, e, image, StorageOf(db), src, false))
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, filepath.Join("testdata", "statefulset-restore-"+string(tc.engine)+".golden.yaml"), sts)
		})
	}
	db := newDatabase(dbv1alpha1.EnginePostgreSQL, "16")
	db.Spec.Backup = &dbv1alpha1.BackupSpec{Storage: dbv1alpha1.BackupStorageSpec{Size: ptr.To(resource.MustParse("20Gi")), StorageClassName: ptr.To("slow")}}
	claim, err := yaml.Marshal(NewBackupClaim(db, resource.MustParse("1Gi")))
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, filepath.Join("testdata", "claim-backups.golden.yaml"), claim)
	b := backupOf(db, "nightly")
	b.Status = dbv1alpha1.DatabaseBackupStatus{Image: "postgres:16", Volume: "orders-backups", Path: "nightly.pgdump"}
	del, err := yaml.Marshal(NewBackupDeleteJob(b, 999))
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, filepath.Join("testdata", "job-backup-delete.golden.yaml"), del)
}

// TestObjectStoreGolden renders the Jobs that stream a MySQL dump and a
// PostgreSQL base backup to an object store with a private CA, delete it
// there, prune the WAL archive and prove a base backup restorable, and the PostgreSQL StatefulSets that archive, alone and
// replicated, and that restore a dump from a store.
func TestObjectStoreGolden(t *testing.T) {
	store := &dbv1alpha1.ObjectStore{Endpoint: "https://s3.example:9000", Bucket: "backups", Prefix: "team-a", Region: "eu-west-1",
		CredentialsSecret: dbv1alpha1.LocalSecretReference{Name: "store-keys"}, CA: &dbv1alpha1.SecretKeySelector{Name: "store-ca", Key: "ca.pem"}}
	const tools = "registry.example/database-controller:v1"
	my := newDatabase(dbv1alpha1.EngineMySQL, "8.4")
	b := backupOf(my, "nightly")
	b.Status = dbv1alpha1.DatabaseBackupStatus{Image: "mysql:8.4", ObjectStore: store, Path: "team-a/default/orders/uid/dumps/nightly.sql"}
	pg := newDatabase(dbv1alpha1.EnginePostgreSQL, "16")
	src := &RestoreSource{Backup: "nightly", Path: "team-a/default/orders/uid/dumps/nightly.pgdump", SourceDatabase: "orders",
		ObjectStore: &dbv1alpha1.ObjectStore{Endpoint: "http://10.0.0.1:7070", Bucket: "backups", CredentialsSecret: dbv1alpha1.LocalSecretReference{Name: "store-keys"}},
		ToolsImage:  tools}
	// A replicated Database that archives its WAL to a store with a
	// private CA, and one that does while it restores from a store.
	archiving := newDatabase(dbv1alpha1.EnginePostgreSQL, "16")
	archiving.Spec.Replicas = ptr.To[int32](3)
	archiving.Spec.Backup = &dbv1alpha1.BackupSpec{ObjectStore: store, Continuous: &dbv1alpha1.ContinuousArchiving{ArchiveTimeoutSeconds: ptr.To[int32](60)}}
	archivingSts := NewStatefulSet(archiving, lookup(t, archiving.Spec.Engine), "postgres:16", StorageOf(archiving), nil, true)
	WithArchiving(archivingSts, archiving, lookup(t, archiving.Spec.Engine), tools)
	restoring := pg.DeepCopy()
	restoring.Spec.Backup = &dbv1alpha1.BackupSpec{ObjectStore: store, Continuous: &dbv1alpha1.ContinuousArchiving{}}
	restoringSts := NewStatefulSet(restoring, lookup(t, restoring.Spec.Engine), "postgres:16", StorageOf(restoring), src, false)
	WithArchiving(restoringSts, restoring, lookup(t, restoring.Spec.Engine), tools)
	alone := pg.DeepCopy()
	alone.Spec.Backup = &dbv1alpha1.BackupSpec{ObjectStore: store, Continuous: &dbv1alpha1.ContinuousArchiving{}}
	aloneSts := NewStatefulSet(alone, lookup(t, alone.Spec.Engine), "postgres:16", StorageOf(alone), nil, false)
	WithArchiving(aloneSts, alone, lookup(t, alone.Spec.Engine), tools)
	base := backupOf(alone, "hourly")
	base.Status = dbv1alpha1.DatabaseBackupStatus{Image: "postgres:16", ObjectStore: store, Path: "team-a/default/orders/uid/base/hourly.tar",
		Method: dbv1alpha1.BackupMethodBaseBackup}
	verified := base.DeepCopy()
	verified.Status.BaseBackup = &dbv1alpha1.BaseBackupStatus{Archive: "team-a/default/orders/uid", Timeline: 1, StartLSN: "0/D000028", StopLSN: "0/D000100"}
	for name, ac := range map[string]any{
		"statefulset-archiving-postgresql":            aloneSts,
		"job-basebackup-postgresql":                   NewBaseBackupJob(base, alone, lookup(t, alone.Spec.Engine), "postgres:16", tools, store, base.Status.Path),
		"job-wal-prune":                               NewWALPruneJob(alone, tools, "00000001000000000000000D"),
		"job-verify-postgresql":                       NewVerifyJob(verified, alone, lookup(t, alone.Spec.Engine), "postgres:16", tools, "base/hourly.tar", "00000001000000000000000D"),
		"statefulset-archiving-replicated-postgresql": archivingSts,
		"statefulset-archiving-restore-postgresql":    restoringSts,
		"job-backup-objectstore-mysql":                NewObjectStoreBackupJob(b, my, lookup(t, my.Spec.Engine), "mysql:8.4", tools, store, b.Status.Path),
		"job-backup-delete-objectstore":               NewObjectStoreDeleteJob(b, tools),
		"statefulset-restore-objectstore-postgresql":  NewStatefulSet(pg, lookup(t, pg.Spec.Engine), "postgres:16", StorageOf(pg), src, false),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := yaml.Marshal(ac)
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, filepath.Join("testdata", name+".golden.yaml"), got)
		})
	}
}

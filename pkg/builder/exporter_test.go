package builder

import (
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// TestExporterGolden renders a monitored replicated PostgreSQL Database's
// StatefulSet with TLS (postgres_exporter beside the server, in plain text
// over the trusted loopback, with a ConfigMap's queries, optional) and a
// monitored MySQL one of TLS Required
// (mysqld_exporter with TLS) with its own image and resources; and the
// PodMonitor of the first.
func TestExporterGolden(t *testing.T) {
	pg := newDatabase(dbv1alpha1.EnginePostgreSQL, "16")
	pg.Spec.Replicas = ptr.To[int32](3)
	pg.Spec.Monitoring = &dbv1alpha1.MonitoringSpec{Enabled: true, Queries: &dbv1alpha1.MonitoringQueries{ConfigMapName: "orders-queries", Key: "pg.yaml"}}
	pg.Spec.TLS = &dbv1alpha1.TLSSpec{}
	pgEngine := lookup(t, pg.Spec.Engine)
	pgSts := NewStatefulSet(pg, pgEngine, "postgres:16", StorageOf(pg), nil, true)
	WithTLS(pgSts, pg, pgEngine, pg.Spec.TLSMode())
	WithExporter(pgSts, pg, pgEngine)

	my := newDatabase(dbv1alpha1.EngineMySQL, "8.4")
	my.Spec.Monitoring = &dbv1alpha1.MonitoringSpec{Enabled: true, Image: "mirror.example.com/mysqld-exporter:v0.17.2",
		Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}
	my.Spec.TLS = &dbv1alpha1.TLSSpec{Mode: dbv1alpha1.TLSRequired}
	myEngine := lookup(t, my.Spec.Engine)
	mySts := NewStatefulSet(my, myEngine, "mysql:8.4", StorageOf(my), nil, false)
	WithTLS(mySts, my, myEngine, my.Spec.TLSMode())
	WithExporter(mySts, my, myEngine)
	for name, ac := range map[string]any{
		"statefulset-monitored-postgresql": pgSts,
		"statefulset-monitored-mysql":      mySts,
		"podmonitor-postgresql":            NewPodMonitor(pg),
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

// TestExporterContainer covers who gets an exporter, with which image, and
// mysqld_exporter's TLS by spec.tls.mode.
func TestExporterContainer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		engine     dbv1alpha1.Engine
		version    string
		monitoring *dbv1alpha1.MonitoringSpec
		tls        *dbv1alpha1.TLSSpec
		wantImage  string // "" for no exporter
		wantTLSArg bool
	}{
		{name: "not asked", engine: dbv1alpha1.EnginePostgreSQL, version: "16"},
		{name: "turned off", engine: dbv1alpha1.EnginePostgreSQL, version: "16", monitoring: &dbv1alpha1.MonitoringSpec{Image: "x.example.com/e:1"}},
		{name: "postgresql", engine: dbv1alpha1.EnginePostgreSQL, version: "16", monitoring: &dbv1alpha1.MonitoringSpec{Enabled: true},
			wantImage: "quay.io/prometheuscommunity/postgres-exporter:v0.17.1"},
		{name: "mysql TLS disabled", engine: dbv1alpha1.EngineMySQL, version: "8.4", monitoring: &dbv1alpha1.MonitoringSpec{Enabled: true},
			tls: &dbv1alpha1.TLSSpec{Mode: dbv1alpha1.TLSDisabled}, wantImage: "quay.io/prometheus/mysqld-exporter:v0.17.2"},
		{name: "mysql TLS enabled", engine: dbv1alpha1.EngineMySQL, version: "8.4", monitoring: &dbv1alpha1.MonitoringSpec{Enabled: true},
			tls: &dbv1alpha1.TLSSpec{}, wantImage: "quay.io/prometheus/mysqld-exporter:v0.17.2", wantTLSArg: true},
		{name: "mariadb, own image", engine: dbv1alpha1.EngineMySQL, version: "10.11", monitoring: &dbv1alpha1.MonitoringSpec{Enabled: true, Image: "localhost/e:1"},
			wantImage: "localhost/e:1"},
		{name: "mongodb has none", engine: dbv1alpha1.EngineMongoDB, version: "7.0", monitoring: &dbv1alpha1.MonitoringSpec{Enabled: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newDatabase(tc.engine, tc.version)
			db.Spec.Monitoring, db.Spec.TLS = tc.monitoring, tc.tls
			e := lookup(t, tc.engine)
			sts := NewStatefulSet(db, e, "server:1", StorageOf(db), nil, false)
			WithExporter(sts, db, e)
			containers := sts.Spec.Template.Spec.Containers
			if *containers[0].Name != e.Name() {
				t.Fatalf("first container %s, want the server's (%s): the server's image is read from the first", *containers[0].Name, e.Name())
			}
			if tc.wantImage == "" {
				if len(containers) != 1 {
					t.Fatalf("%d containers, want the server alone", len(containers))
				}
				return
			}
			if len(containers) != 2 || *containers[1].Name != ExporterContainer {
				t.Fatalf("containers %d, want the server and %s", len(containers), ExporterContainer)
			}
			x := containers[1]
			if *x.Image != tc.wantImage {
				t.Errorf("image %s, want %s", *x.Image, tc.wantImage)
			}
			if got := slices.Contains(x.Args, "--tls.insecure-skip-verify"); got != tc.wantTLSArg {
				t.Errorf("args %q: TLS %v, want %v", x.Args, got, tc.wantTLSArg)
			}
			if *x.Ports[0].Name != "metrics" || x.ReadinessProbe != nil || x.LivenessProbe != nil {
				t.Errorf("port %s, readiness %v, liveness %v: want port metrics and no probe", *x.Ports[0].Name, x.ReadinessProbe, x.LivenessProbe)
			}
		})
	}
}

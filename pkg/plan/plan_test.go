package plan

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
	"github.com/dbcontroller/database-controller/pkg/status"
)

func database(engine dbv1alpha1.Engine, version, running string) *dbv1alpha1.Database {
	return &dbv1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "default", UID: "uid-1"},
		Spec: dbv1alpha1.DatabaseSpec{
			Engine:  engine,
			Version: version,
			Storage: dbv1alpha1.StorageSpec{Size: resource.MustParse("2Gi")},
		},
		Status: dbv1alpha1.DatabaseStatus{CurrentVersion: running},
	}
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name         string
		db           *dbv1alpha1.Database
		wantProblem  *status.Problem
		wantEndpoint string
		wantImage    string
	}{
		{
			name:         "postgresql in the catalog",
			db:           database("postgresql", "16", ""),
			wantEndpoint: "orders.default.svc:5432",
			wantImage:    "postgres:16",
		},
		{
			name:         "mysql",
			db:           database("mysql", "8.4", "8.0"),
			wantEndpoint: "orders.default.svc:3306",
			wantImage:    "mysql:8.4",
		},
		{
			name:         "mongodb",
			db:           database("mongodb", "7.0", "7.0"),
			wantEndpoint: "orders.default.svc:27017",
			wantImage:    "mongo:7.0",
		},
		{
			name: "an image override outside the catalog",
			db: func() *dbv1alpha1.Database {
				db := database("postgresql", "19", "")
				db.Spec.Image = "mirror.local/postgres:19"
				return db
			}(),
			wantEndpoint: "orders.default.svc:5432",
			wantImage:    "mirror.local/postgres:19",
		},
		{
			name: "unknown engine: no endpoint",
			db:   database("oracle", "23", ""),
			wantProblem: &status.Problem{Reason: status.ReasonUnknownVersion,
				Message: `unknown engine "oracle": must be one of postgresql, mysql, mongodb`},
		},
		{
			name: "version not in the catalog",
			db:   database("postgresql", "9", ""),
			wantProblem: &status.Problem{Reason: status.ReasonUnknownVersion,
				Message: `version "9" of postgresql is not in the catalog (known: 14, 15, 16, 17, 18); use one of those or set spec.image`},
			wantEndpoint: "orders.default.svc:5432",
		},
		{
			name:         "a PostgreSQL major upgrade not begun: the old version's image",
			db:           database("postgresql", "17", "16"),
			wantEndpoint: "orders.default.svc:5432",
			wantImage:    "postgres:16",
		},
		{
			name: "a PostgreSQL major upgrade of a replicated Database whose primary is not the first pod",
			db: func() *dbv1alpha1.Database {
				db := database("postgresql", "17", "16")
				db.Spec.Replicas = ptr.To[int32](3)
				db.Status.Replication = &dbv1alpha1.ReplicationStatus{Primary: "orders-1"}
				return db
			}(),
			wantProblem: &status.Problem{Reason: engine.ReasonMajorUpgradeRefused,
				Message: "postgresql 17 cannot read the data that 16 wrote: the controller upgrades the primary's data in place and seeds the replicas again from it, and the primary must be orders-0, the pod that starts first. Switch over to it (spec.replication.primary: orders-0) and wait for Running, or set spec.version back to 16"},
			wantEndpoint: "orders.default.svc:5432",
		},
		{
			name: "a PostgreSQL major upgrade of a replicated Database whose primary is the first pod",
			db: func() *dbv1alpha1.Database {
				db := database("postgresql", "17", "16")
				db.Spec.Replicas = ptr.To[int32](3)
				db.Status.Replication = &dbv1alpha1.ReplicationStatus{Primary: "orders-0"}
				return db
			}(),
			wantEndpoint: "orders.default.svc:5432",
			wantImage:    "postgres:16",
		},
		{
			name: "a MongoDB series skip",
			db:   database("mongodb", "8.0", "6.0"),
			wantProblem: &status.Problem{Reason: engine.ReasonSeriesSkipRefused,
				Message: "mongodb upgrades one release series at a time along 6.0 → 7.0 → 8.0; 6.0 to 8.0 skips or leaves that path, and the data of 6.0 cannot be read by 8.0. Set spec.version to the next series (7.0), wait for Running, then go on; or set spec.version back to 6.0"},
			wantEndpoint: "orders.default.svc:27017",
		},
		{
			name: "downgrade of a running database",
			db:   database("mysql", "8.0", "8.4"),
			wantProblem: &status.Problem{Reason: engine.ReasonDowngradeRefused,
				Message: "version 8.0 is older than the running version 8.4; mysql cannot be downgraded in place: set spec.version back to 8.4 or later"},
			wantEndpoint: "orders.default.svc:3306",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Compute(tt.db, Observed{})
			if !reflect.DeepEqual(p.Problem, tt.wantProblem) {
				t.Errorf("Problem = %+v, want %+v", p.Problem, tt.wantProblem)
			}
			if p.Endpoint != tt.wantEndpoint || p.Image != tt.wantImage {
				t.Errorf("Endpoint, Image = %q, %q; want %q, %q", p.Endpoint, p.Image, tt.wantEndpoint, tt.wantImage)
			}
			if tt.wantProblem != nil {
				if p.HeadlessService != nil || p.Service != nil || p.StatefulSet != nil || p.Grow != nil {
					t.Errorf("a plan with a problem has children: %+v", p)
				}
				return
			}
			if *p.HeadlessService.Name != "orders-headless" || *p.Service.Name != "orders" || *p.StatefulSet.Name != "orders" {
				t.Errorf("children named %q, %q, %q", *p.HeadlessService.Name, *p.Service.Name, *p.StatefulSet.Name)
			}
			if got := p.StatefulSet.Spec.Template.Spec.Containers[0].Image; *got != tt.wantImage {
				t.Errorf("StatefulSet image = %q, want %q", *got, tt.wantImage)
			}
			if tt.db.Spec.Engine == "mongodb" && p.NewFeatureCompatibilityVersion != "7.0" {
				t.Errorf("NewFeatureCompatibilityVersion = %q, want 7.0", p.NewFeatureCompatibilityVersion)
			}
			if s := p.Secret("pw"); *s.Name != "orders-credentials" || string(s.Data["password"]) != "pw" {
				t.Errorf("Secret = %s with password %q", *s.Name, s.Data["password"])
			}
		})
	}
}

// The claim template of an existing StatefulSet cannot change: the plan
// keeps what was created, even when spec.storage has changed since.
func TestComputeKeepsTheClaimTemplate(t *testing.T) {
	db := database("postgresql", "16", "16")
	first := Compute(db, Observed{})
	var sts appsv1.StatefulSet
	if err := builder.Convert(first.StatefulSet, &sts); err != nil {
		t.Fatal(err)
	}
	db.Spec.Storage = dbv1alpha1.StorageSpec{Size: resource.MustParse("9Gi"), StorageClassName: ptr.To("other")}
	p := Compute(db, Observed{StatefulSet: &sts})
	claim := p.StatefulSet.Spec.VolumeClaimTemplates[0].Spec
	if got := (*claim.Resources.Requests)[corev1.ResourceStorage]; got.String() != "2Gi" || claim.StorageClassName != nil {
		t.Fatalf("claim template = %s in %v, want 2Gi in the default class", got.String(), claim.StorageClassName)
	}
	if fresh := Compute(db, Observed{}).StatefulSet.Spec.VolumeClaimTemplates[0].Spec; *fresh.StorageClassName != "other" {
		t.Fatalf("a new StatefulSet asks for class %v, want other", fresh.StorageClassName)
	}
}

func TestComputeClaimsToGrow(t *testing.T) {
	claim := func(name, size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
		}
	}
	db := database("postgresql", "16", "16") // spec.storage.size 2Gi
	p := Compute(db, Observed{Claims: []*corev1.PersistentVolumeClaim{
		claim("data-orders-0", "1Gi"),    // grows
		claim("data-orders-1", "2Gi"),    // already there
		claim("data-orders-2", "5Gi"),    // never shrunk
		claim("scratch-orders-0", "1Gi"), // not a data claim
	}})
	var got []string
	for _, g := range p.Grow {
		got = append(got, g.Name+" "+g.From.String()+"->"+g.To.String())
	}
	want := []string{"data-orders-0 1Gi->2Gi"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Grow = %q, want %q", got, want)
	}
}

func TestComputeEndOfLife(t *testing.T) {
	for _, tt := range []struct {
		engine  dbv1alpha1.Engine
		version string
		eol     bool
	}{
		{"mysql", "8.0", true}, {"mysql", "8.4", false}, {"mongodb", "6.0", true}, {"mongodb", "7.0", false}, {"postgresql", "14", false},
	} {
		p := Compute(database(tt.engine, tt.version, ""), Observed{})
		if p.Problem != nil || (p.EndOfLife != "") != tt.eol {
			t.Errorf("%s %s: EndOfLife = %q, problem %v; want end of life %v", tt.engine, tt.version, p.EndOfLife, p.Problem, tt.eol)
		}
	}
}

// Which Databases replicate, what the client Service selects, and how many
// pods the StatefulSet keeps so that a scale-down never removes the primary.
func TestComputeReplication(t *testing.T) {
	replicated := func(replicas int32, primary string) *dbv1alpha1.Database {
		db := database(dbv1alpha1.EnginePostgreSQL, "16", "16")
		db.Spec.Replicas = ptr.To(replicas)
		if primary != "" {
			db.Status.Replication = &dbv1alpha1.ReplicationStatus{Primary: primary}
		}
		return db
	}
	tests := []struct {
		name             string
		db               *dbv1alpha1.Database
		wantReplicated   bool
		wantRoleSelector bool
		wantReplicas     int32
	}{
		{"postgresql, one replica: a single server", replicated(1, ""), false, false, 1},
		{"postgresql, three replicas, no primary yet: every pod behind the Service", replicated(3, ""), true, false, 3},
		{"postgresql with a primary: the Service selects it", replicated(3, "orders-1"), true, true, 3},
		{"scaled down below the primary: kept until it moves", replicated(1, "orders-2"), true, true, 3},
		{"scaled down, the primary stays: no more pods", replicated(2, "orders-0"), true, true, 2},
		{"scaled to 0: every server stops, the primary too", replicated(0, "orders-2"), true, true, 0},
		{"mysql, three replicas, no primary yet: GTID replication", func() *dbv1alpha1.Database {
			db := database(dbv1alpha1.EngineMySQL, "8.4", "8.4")
			db.Spec.Replicas = ptr.To[int32](3)
			return db
		}(), true, false, 3},
		{"mongodb, three replicas (stored before the API refused them): independent servers", func() *dbv1alpha1.Database {
			db := database(dbv1alpha1.EngineMongoDB, "7.0", "7.0")
			db.Spec.Replicas = ptr.To[int32](3)
			return db
		}(), false, false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Compute(tt.db, Observed{})
			if p.Replicated != tt.wantReplicated || (p.ReadOnlyService != nil) != tt.wantReplicated {
				t.Errorf("Replicated = %v, read-only Service %v; want %v", p.Replicated, p.ReadOnlyService != nil, tt.wantReplicated)
			}
			_, role := p.Service.Spec.Selector[dbv1alpha1.LabelRole]
			if role != tt.wantRoleSelector {
				t.Errorf("client Service selector %v: role selected %v, want %v", p.Service.Spec.Selector, role, tt.wantRoleSelector)
			}
			if got := *p.StatefulSet.Spec.Replicas; got != tt.wantReplicas {
				t.Errorf("StatefulSet replicas = %d, want %d", got, tt.wantReplicas)
			}
			onDelete := *p.StatefulSet.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType
			if onDelete != tt.wantReplicated {
				t.Errorf("update strategy %s; OnDelete wanted %v", *p.StatefulSet.Spec.UpdateStrategy.Type, tt.wantReplicated)
			}
		})
	}
}

// The servers get at start the parameters a server last accepted; before
// any was asked, a new Database's from its spec (no data, no restart), and
// none for one made before it had parameters, until a server checked them.
func TestStartParameters(t *testing.T) {
	e, err := registry.Lookup("postgresql")
	if err != nil {
		t.Fatal(err)
	}
	spec := map[string]string{"shared_buffers": "1GB", "work_mem": "64MB", "pg_stat_statements.max": "10000"}
	accepted := map[string]string{"shared_buffers": "512MB"}
	for _, tc := range []struct {
		name     string
		status   *dbv1alpha1.ParametersStatus
		creating bool
		want     map[string]string
	}{
		{"new Database", nil, true, map[string]string{"shared_buffers": "1GB", "pg_stat_statements.max": "10000"}},
		{"made before it had parameters", nil, false, nil},
		{"accepted by a server", &dbv1alpha1.ParametersStatus{Start: accepted}, false, accepted},
		{"accepted, none at start", &dbv1alpha1.ParametersStatus{Live: map[string]string{"work_mem": "64MB"}}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := database(dbv1alpha1.EnginePostgreSQL, "16", "16")
			db.Spec.Parameters = spec
			db.Status.Parameters = tc.status
			if got := StartParameters(db, e, tc.creating, spec); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("StartParameters = %v, want %v", got, tc.want)
			}
		})
	}
}

// While a major upgrade holds the data at its old version, the StatefulSet
// runs the old image: with no replica while the data is upgraded, and
// with spec.replicas while it is backed up and once the upgrade failed;
// once the data is upgraded, the new image.
func TestComputeHoldsAMajorUpgrade(t *testing.T) {
	for _, tt := range []struct {
		phase    dbv1alpha1.MajorUpgradePhase
		image    string
		replicas int32
	}{
		{dbv1alpha1.MajorUpgradeBackingUp, "mirror/pg:16", 1},
		{dbv1alpha1.MajorUpgradeUpgrading, "mirror/pg:16", 0},
		{dbv1alpha1.MajorUpgradeFailed, "mirror/pg:16", 1},
		{dbv1alpha1.MajorUpgradeAnalyzing, "mirror/pg:17", 1},
	} {
		t.Run(string(tt.phase), func(t *testing.T) {
			db := database("postgresql", "17", "16")
			db.Spec.Image = "mirror/pg:17"
			p := Compute(db, Observed{MajorUpgrade: &dbv1alpha1.MajorUpgradeStatus{From: "16", To: "17", FromImage: "mirror/pg:16", Phase: tt.phase}})
			if p.Problem != nil {
				t.Fatal(p.Problem)
			}
			if p.Image != tt.image || *p.StatefulSet.Spec.Template.Spec.Containers[0].Image != tt.image || *p.StatefulSet.Spec.Replicas != tt.replicas {
				t.Errorf("image %q, StatefulSet image %q and replicas %d; want %q and %d", p.Image,
					*p.StatefulSet.Spec.Template.Spec.Containers[0].Image, *p.StatefulSet.Spec.Replicas, tt.image, tt.replicas)
			}
		})
	}
}

package reconcile

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

func TestInvalidSpecSetsConditionWithoutTouchingAnything(t *testing.T) {
	tests := []struct {
		name    string
		db      func() *dbv1alpha1.Database
		reason  string
		message string
	}{
		{
			name:    "unknown version",
			db:      func() *dbv1alpha1.Database { return newDatabase("orders", "postgresql", "9", 1) },
			reason:  "UnknownVersion",
			message: `version "9" of postgresql is not in the catalog (known: 14, 15, 16, 17, 18); use one of those or set spec.image`,
		},
		{
			name: "downgrade",
			db: func() *dbv1alpha1.Database {
				db := newDatabase("orders", "postgresql", "15", 1)
				db.Status.CurrentVersion = "16"
				return db
			},
			reason:  "DowngradeRefused",
			message: "version 15 is older than the running version 16; postgresql cannot be downgraded in place: set spec.version back to 16 or later",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := tt.db()
			f.seed(db)
			st := wantStatus(db, "Failed", 0, 0, db.Status.CurrentVersion,
				"False", tt.reason, tt.message, "False", tt.reason, tt.message)
			f.expectStatusUpdate(db, st)
			f.events = []string{"Warning " + tt.reason + " " + tt.message}
			f.run(ctx, ref(db), needsPerson)

			// The next sync of the same spec is a steady state: no write, no
			// event, and no error, so no hot requeue.
			f2 := newFixture(t)
			db2 := db.DeepCopy()
			db2.Status = st
			f2.seed(db2)
			f2.run(ctx, ref(db2), needsPerson)
		})
	}
}

func TestDowngradeOfARunningDatabaseLeavesItRunning(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.converged(db)
	db.Spec.Version = "15"
	db.Generation = 2
	msg := "version 15 is older than the running version 16; postgresql cannot be downgraded in place: set spec.version back to 16 or later"
	st := wantStatus(db, "Failed", 1, 1, "16", "False", "DowngradeRefused", msg, "False", "DowngradeRefused", msg)
	keepTransitionTime(&st, "Progressing") // False before and after
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning DowngradeRefused " + msg}
	f.run(ctx, ref(db), needsPerson)
}

// Version changes the data cannot take leave the StatefulSet untouched:
// only the status and a Warning event say why, and how to get there.
func TestRefusedVersionChangesLeaveTheStatefulSetUntouched(t *testing.T) {
	tests := []struct {
		name                  string
		engine                dbv1alpha1.Engine
		running, fcv, desired string
		reason, msg           string
	}{
		{"MongoDB series skip", "mongodb", "6.0", "6.0", "8.0", "SeriesSkipRefused",
			"mongodb upgrades one release series at a time along 6.0 → 7.0 → 8.0; 6.0 to 8.0 skips or leaves that path, and the data of 6.0 cannot be read by 8.0. Set spec.version to the next series (7.0), wait for Running, then go on; or set spec.version back to 6.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", tt.engine, tt.running, 1)
			f.converged(db)
			db.Status.FeatureCompatibilityVersion = tt.fcv
			db.Spec.Version = tt.desired
			db.Generation = 2
			st := wantStatus(db, "Failed", 1, 1, tt.running, "False", tt.reason, tt.msg, "False", tt.reason, tt.msg)
			st.FeatureCompatibilityVersion = tt.fcv
			keepTransitionTime(&st, "Progressing") // False before and after
			if tt.running == "6.0" {
				// mongo:6.0 is end of life: its condition stays as it was.
				eol := *meta.FindStatusCondition(db.Status.Conditions, "VersionSupported")
				eol.ObservedGeneration = 2
				st.Conditions = append(st.Conditions, eol)
			}
			f.expectStatusUpdate(db, st)
			f.events = []string{"Warning " + tt.reason + " " + tt.msg}
			f.run(ctx, ref(db), needsPerson)
		})
	}
}

// A version that no longer gets upstream rebuilds runs, with a
// VersionSupported condition and one Warning event, and no more after that.
func TestEndOfLifeVersionWarnsOnceAndRuns(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("inventory", "mysql", "8.0", 1)
	sts := rolledOut(expectedStatefulSet(t, db), 1)
	f.seed(db, sts, expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"))
	msg := `MySQL 8.0 is end of life: the mysql:8.0 image gets no more upstream rebuilds, security fixes included. It keeps running; move to 8.4 (spec.version: "8.4"), which upgrades the data in place and disables mysql_native_password by default`
	st := wantStatus(db, "Running", 1, 1, "8.0", "True", "AllReplicasReady", "1/1 replicas are ready", "False", "Converged", "the Database matches its spec")
	st.Conditions = append(st.Conditions, metav1.Condition{Type: "VersionSupported", Status: "False", Reason: "EndOfLife", Message: msg,
		ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testNow)})
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning EndOfLife " + msg, "Normal Running mysql 8.0 is running: 1/1 replicas are ready"}
	f.run(ctx, ref(db), synced)

	// The next sync, with that status stored: nothing to write or say.
	f2 := newFixture(t)
	db2 := db.DeepCopy()
	db2.Status = st
	f2.seed(db2, sts.DeepCopy(), expectedHeadless(t, db2), expectedService(t, db2), expectedSecret(t, db2, "pw"))
	f2.run(ctx, ref(db2), synced)
}

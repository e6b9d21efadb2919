package reconcile

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
)

// A settled Database is not passed over again while nothing it depends on
// has a new resourceVersion: a drift that no resourceVersion shows (which
// a real API server never makes) proves the pass was skipped. A new
// resourceVersion, and the end of SettledTTL, each bring a full
// pass back, which repairs it.
func TestSettledDatabaseIsSkippedUntilSomethingChanges(t *testing.T) {
	for _, tt := range []struct {
		name string
		// change is done to the drifted StatefulSet and the clock before the last sync.
		change func(f *fixture, sts *appsv1.StatefulSet)
	}{
		{"the StatefulSet's resourceVersion changes", func(_ *fixture, sts *appsv1.StatefulSet) { sts.ResourceVersion = "99" }},
		{"the settled state is older than SettledTTL", func(f *fixture, _ *appsv1.StatefulSet) {
			f.clock.SetTime(testNow.Add(SettledTTL + time.Second))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 1)
			db.ResourceVersion = "10"
			sts, headless, svc, secret := f.converged(db)
			for i, o := range []metav1.Object{sts, headless, svc, secret} {
				o.SetResourceVersion(fmt.Sprint(i + 1))
			}
			r, recorder := f.newReconciler()
			sync := func(wantSkipped bool) {
				t.Helper()
				f.syncAndCheck(ctx, r, recorder, ref(db), map[bool]outcome{true: skipped, false: synced}[wantSkipped])
			}
			sync(false) // the first pass finds nothing to do: settled
			sync(true)

			drifted := sts.DeepCopy()
			drifted.Spec.Template.Spec.Containers[0].Image = "postgres:latest"
			if err := f.caches.StatefulSets.Update(drifted); err != nil {
				t.Fatal(err)
			}
			sync(true)

			tt.change(f, drifted)
			if err := f.caches.StatefulSets.Update(drifted); err != nil {
				t.Fatal(err)
			}
			f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
			f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
			sync(false)
		})
	}
}

// A pass that asks to look again depends on the clock, which no
// resourceVersion shows: it never settles, and the next sync is a full pass.
func TestRecheckedDatabaseIsNeverSkipped(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.ResourceVersion = "10"
	sts := notReadyStatefulSet(t, db)
	pod := startingPod(db)
	headless, svc, secret := expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw")
	for i, o := range []metav1.Object{sts, headless, svc, secret, pod} {
		o.SetResourceVersion(fmt.Sprint(i + 1))
	}
	f.seed(db, sts, headless, svc, secret, pod)
	f.expectStatusUpdate(db, wantStatus(db, "Provisioning", 1, 0, "", "False", "ReplicasNotReady", "0/1 replicas are ready",
		"True", "Provisioning", "waiting for 0/1 replicas to become ready"))
	r, recorder := f.newReconciler()
	for range 2 {
		// The lister still holds the status before the write: the same
		// write again shows that the second sync was a full pass.
		f.syncAndCheck(ctx, r, recorder, ref(db), recheckSoon)
	}
}

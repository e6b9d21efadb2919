package reconcile

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// monitoredDatabase is a Running single-server PostgreSQL Database with
// spec.monitoring, its ready pod answering at 192.0.2.10.
func monitoredDatabase(t *testing.T, f *fixture) *dbv1alpha1.Database {
	return readyDatabase(t, f, &dbv1alpha1.MonitoringSpec{Enabled: true})
}

// readyDatabase is monitoredDatabase with monitoring as given.
func readyDatabase(t *testing.T, f *fixture, monitoring *dbv1alpha1.MonitoringSpec) *dbv1alpha1.Database {
	db := newDatabase("orders", "postgresql", "16", 1)
	db.Spec.Monitoring = monitoring
	f.converged(db)
	f.seed(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: names.PodName(db, 0), Namespace: db.Namespace, Labels: names.SelectorLabels(db)},
		Status: corev1.PodStatus{PodIP: "192.0.2.10", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}})
	f.sql.Facts["192.0.2.10"] = primaryFacts("orders-0", 100)
	return db
}

// A monitored Database's primary gets the monitoring user once: the pass
// reads the credentials, makes it, and says so in one event; the next
// pass asks nothing, writes nothing and says nothing.
func TestMonitoringUserMadeOnce(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := monitoredDatabase(t, f)
	if c := expectedStatefulSet(t, db).Spec.Template.Spec.Containers; len(c) != 2 || c[1].Name != "exporter" {
		t.Fatalf("the StatefulSet's containers %d, want the server and the exporter", len(c))
	}
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.calls = []string{"ensure monitoring user on 192.0.2.10"}
	f.events = []string{"Normal MonitoringUserCreated Made the monitoring user dbcontroller_monitor on orders-0, which the exporters log in as"}
	r, recorder := f.newReconciler()
	f.syncAndCheck(ctx, r, recorder, ref(db), synced)

	t.Run("the next pass asks nothing", func(t *testing.T) {
		f.kubeactions, f.calls, f.events = nil, nil, nil
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	})

	t.Run("a restarted controller asks once, and the user is there", func(t *testing.T) {
		f := newFixture(t)
		db := monitoredDatabase(t, f)
		f.sql.MonitoringUsers = map[string]bool{"192.0.2.10": true}
		f.expectGet(secretsResource, "default", "orders-credentials")
		f.calls = []string{"ensure monitoring user on 192.0.2.10"}
		f.run(ctx, ref(db), synced)
	})

	t.Run("an unmonitored Database is not asked", func(t *testing.T) {
		f := newFixture(t)
		db := readyDatabase(t, f, &dbv1alpha1.MonitoringSpec{Image: "mirror.example.com/exporter:1"})
		f.run(ctx, ref(db), synced)
	})
}

// A primary that cannot make the user does not hold the pass: one Warning
// says why, the pass asks again after MonitoringPoll, and the same
// failure is not said twice; once it succeeds, it is said.
func TestMonitoringUserFailure(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := monitoredDatabase(t, f)
	delete(f.sql.Facts, "192.0.2.10")
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.calls = []string{"ensure monitoring user on 192.0.2.10"}
	f.events = []string{"Warning MonitoringUserFailed Cannot make the monitoring user dbcontroller_monitor on orders-0, so the exporters cannot log in (their up metric is 0): dial tcp 192.0.2.10: connect: connection refused; trying again every 1m0s"}
	r, recorder := f.newReconciler()
	f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)
	if f.err.(*RecheckError).After != MonitoringPoll {
		t.Fatalf("asks again after %s, want %s", f.err.(*RecheckError).After, MonitoringPoll)
	}

	f.kubeactions, f.events = nil, nil
	f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)

	f.sql.Facts["192.0.2.10"] = primaryFacts("orders-0", 100)
	f.events = []string{"Normal MonitoringUserCreated Made the monitoring user dbcontroller_monitor on orders-0, which the exporters log in as"}
	f.syncAndCheck(ctx, r, recorder, ref(db), synced)
}

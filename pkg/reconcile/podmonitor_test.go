package reconcile

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
)

// podMonitorCluster is a fixture of a cluster with the Prometheus
// Operator's API, and a Running Database (monitored as monitoring says)
// whose primary has the monitoring user: a pass asks it once.
func podMonitorCluster(t *testing.T, monitoring *dbv1alpha1.MonitoringSpec) (*fixture, *dbv1alpha1.Database) {
	f := newFixture(t)
	f.podMonitors = true
	db := readyDatabase(t, f, monitoring)
	f.sql.MonitoringUsers = map[string]bool{"192.0.2.10": true}
	if db.Spec.Monitored() {
		f.expectGet(secretsResource, "default", "orders-credentials")
		f.calls = []string{"ensure monitoring user on 192.0.2.10"}
	}
	return f, db
}

// cachedPodMonitor is pm as the informer holds it.
func cachedPodMonitor(pm *unstructured.Unstructured) *unstructured.Unstructured {
	pm.SetResourceVersion("7")
	pm.SetUID(types.UID("pm-uid"))
	return pm
}

// Where the cluster has the Prometheus Operator's API, a monitored
// Database gets a PodMonitor of its own, named as it, owned like any
// child: made once, repaired when changed, deleted once monitoring is
// off; one of the name that is another's is left alone, said once.
func TestPodMonitor(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	monitored := &dbv1alpha1.MonitoringSpec{Enabled: true}

	t.Run("made", func(t *testing.T) {
		f, db := podMonitorCluster(t, monitored)
		pm := builder.NewPodMonitor(db)
		if got := pm.Object["spec"]; got.(map[string]any)["podMetricsEndpoints"].([]any)[0].(map[string]any)["port"] != "metrics" {
			t.Fatalf("spec %v, want the port named metrics", got)
		}
		f.dynamicActions = append(f.dynamicActions, actiontest.Create(builder.PodMonitorGVR, pm))
		f.events = []string{"Normal Created Created PodMonitor orders"}
		f.run(ctx, ref(db), synced)
	})

	t.Run("as it should be", func(t *testing.T) {
		f, db := podMonitorCluster(t, monitored)
		f.seed(cachedPodMonitor(builder.NewPodMonitor(db)))
		f.run(ctx, ref(db), synced)
	})

	t.Run("changed by someone", func(t *testing.T) {
		f, db := podMonitorCluster(t, monitored)
		pm := cachedPodMonitor(builder.NewPodMonitor(db))
		pm.Object["spec"].(map[string]any)["podMetricsEndpoints"] = []any{map[string]any{"port": "postgresql"}}
		f.seed(pm)
		f.dynamicActions = append(f.dynamicActions, actiontest.Apply(t, builder.PodMonitorGVR, "default", "orders", builder.NewPodMonitor(db)))
		f.events = []string{"Normal Updated Updated PodMonitor orders to match the Database spec"}
		f.run(ctx, ref(db), synced)
	})

	t.Run("monitoring off", func(t *testing.T) {
		f, db := podMonitorCluster(t, &dbv1alpha1.MonitoringSpec{Enabled: false})
		f.seed(cachedPodMonitor(builder.NewPodMonitor(db)))
		f.dynamicActions = append(f.dynamicActions, actiontest.DeleteUID(builder.PodMonitorGVR, "default", "orders", "pm-uid"))
		f.events = []string{"Normal Updated Deleted PodMonitor orders: spec.monitoring is off"}
		f.run(ctx, ref(db), synced)
	})

	t.Run("not monitored, none", func(t *testing.T) {
		f, db := podMonitorCluster(t, nil)
		f.run(ctx, ref(db), synced)
	})

	t.Run("another's", func(t *testing.T) {
		f, db := podMonitorCluster(t, monitored)
		pm := cachedPodMonitor(builder.NewPodMonitor(db))
		pm.SetOwnerReferences(nil)
		f.seed(pm)
		f.events = []string{"Warning ResourceConflict PodMonitor default/orders exists and is not controlled by this Database; it is left untouched, and the Database's servers get no PodMonitor of their own: delete or rename it"}
		r, recorder := f.newReconciler()
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)
		// Said once.
		f.kubeactions, f.calls, f.events = nil, nil, nil
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	})

	t.Run("another's, unlabelled: not in the cache", func(t *testing.T) {
		f, db := podMonitorCluster(t, monitored)
		pm := builder.NewPodMonitor(db)
		pm.SetOwnerReferences(nil)
		pm.SetLabels(nil)
		f.podMonitorLister = nil
		r, recorder := f.newReconciler()
		if err := f.dynamic.Tracker().Create(builder.PodMonitorGVR, pm, "default"); err != nil {
			t.Fatal(err)
		}
		f.dynamicActions = append(f.dynamicActions, actiontest.Create(builder.PodMonitorGVR, builder.NewPodMonitor(db)),
			actiontest.Get(builder.PodMonitorGVR, "default", "orders"))
		f.events = []string{"Warning ResourceConflict PodMonitor default/orders exists and is not controlled by this Database; it is left untouched, and the Database's servers get no PodMonitor of their own: delete or rename it"}
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	})
}

package reconcile

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/drift"
	"github.com/dbcontroller/database-controller/pkg/engine/mysql"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// parametersDatabase is a Running single-server PostgreSQL Database made
// before it had parameters, with its ready pod answering at 192.0.2.10,
// that now asks for params.
func parametersDatabase(t *testing.T, f *fixture, params map[string]string) (*dbv1alpha1.Database, *corev1.Pod) {
	return engineParametersDatabase(t, f, newDatabase("orders", "postgresql", "16", 1), params)
}

// engineParametersDatabase is parametersDatabase of db's engine.
func engineParametersDatabase(t *testing.T, f *fixture, db *dbv1alpha1.Database, params map[string]string) (*dbv1alpha1.Database, *corev1.Pod) {
	f.converged(db)
	db.Spec.Parameters = params
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: names.PodName(db, 0), Namespace: db.Namespace, Labels: names.SelectorLabels(db)},
		Status: corev1.PodStatus{PodIP: "192.0.2.10", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	f.seed(pod)
	f.sql.Facts["192.0.2.10"] = primaryFacts("orders-0", 100)
	return db, pod
}

// withCondition is st with the ParametersApplied condition c, changed now.
func withCondition(db *dbv1alpha1.Database, st dbv1alpha1.DatabaseStatus, c metav1.Condition) dbv1alpha1.DatabaseStatus {
	st = *st.DeepCopy()
	c.Type, c.ObservedGeneration, c.LastTransitionTime = dbv1alpha1.ConditionParametersApplied, db.Generation, metav1.NewTime(testNow)
	meta.SetStatusCondition(&st.Conditions, c)
	return st
}

// Parameters given to a running server: the primary checks them all;
// work_mem, which a running server takes, is set on it (ALTER SYSTEM and a
// reload), shared_buffers, read at start, goes to status.parameters.start,
// and the condition says the server restarts to take it. The next pass
// gives it to the StatefulSet's pods on their command line, and asks no
// server. Once the pod runs with it, the condition says so, and a steady
// Database costs no write and no SQL.
func TestParametersLiveAndAtStart(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	params := map[string]string{"work_mem": "64MB", "shared_buffers": "256MB"}
	applied := &dbv1alpha1.ParametersStatus{Applied: drift.Digest(params),
		Start: map[string]string{"shared_buffers": "256MB"}, Live: map[string]string{"work_mem": "64MB"}}
	pending := metav1.Condition{Status: metav1.ConditionFalse, Reason: status.ReasonRestartPending,
		Message: "1 of 1 servers restart to take the parameters read at start (shared_buffers=256MB): a replicated Database's replicas first, its primary last, after a switchover"}

	f := newFixture(t)
	db, _ := parametersDatabase(t, f, params)
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.calls = []string{"check parameters on 192.0.2.10: shared_buffers=256MB work_mem=64MB", "set parameters on 192.0.2.10: work_mem=64MB"}
	st := withCondition(db, db.Status, pending)
	st.Parameters = applied
	f.expectStatusUpdate(db, st)
	f.run(ctx, ref(db), synced)

	t.Run("the next pass restarts the server with shared_buffers", func(t *testing.T) {
		f := newFixture(t)
		db, _ := parametersDatabase(t, f, params)
		db.Status = st
		want := desiredStatefulSet(t, db)
		sts := expectedStatefulSet(t, db)
		if c := sts.Spec.Template.Spec.Containers[0]; !slices.Equal(c.Args, []string{"postgres", "-c", "shared_buffers=256MB"}) {
			t.Fatalf("server arguments %q, want shared_buffers given at start", c.Args)
		}
		f.expectApply(statefulSetsResource, "default", "orders", want)
		f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
		f.run(ctx, ref(db), synced)
	})

	t.Run("the pod runs with it: applied, and nothing more to do", func(t *testing.T) {
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		db.Spec.Parameters = params
		db.Status.Parameters = applied
		sts, _, _, _ := f.converged(db)
		labels := names.SelectorLabels(db)
		labels["controller-revision-hash"] = sts.Status.UpdateRevision
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: names.PodName(db, 0), Namespace: db.Namespace, Labels: labels},
			Status: corev1.PodStatus{PodIP: "192.0.2.10", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		f.seed(pod)
		f.expectStatusUpdate(db, withCondition(db, db.Status, metav1.Condition{Status: metav1.ConditionTrue, Reason: status.ReasonParametersApplied,
			Message: "the servers run with the 2 parameters asked for"}))
		f.run(ctx, ref(db), synced)

		f = newFixture(t)
		db.Status = withCondition(db, db.Status, metav1.Condition{Status: metav1.ConditionTrue, Reason: status.ReasonParametersApplied,
			Message: "the servers run with the 2 parameters asked for"})
		f.converged(db)
		f.seed(pod)
		f.run(ctx, ref(db), synced)
	})
}

// MySQL's parameters take the same steps: max_connections, which a
// running server takes, is set on it; back_log, read at start, is given
// to the next pods on the command line, as --back_log=123.
func TestParametersMySQL(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	params := map[string]string{"max_connections": "77", "back_log": "123"}
	f := newFixture(t)
	f.sql.AtStart = mysql.AtStart
	db, _ := engineParametersDatabase(t, f, newDatabase("orders", "mysql", "8.4", 1), params)
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.calls = []string{"check parameters on 192.0.2.10: back_log=123 max_connections=77", "set parameters on 192.0.2.10: max_connections=77"}
	st := withCondition(db, db.Status, metav1.Condition{Status: metav1.ConditionFalse, Reason: status.ReasonRestartPending,
		Message: "1 of 1 servers restart to take the parameters read at start (back_log=123): a replicated Database's replicas first, its primary last, after a switchover"})
	st.Parameters = &dbv1alpha1.ParametersStatus{Applied: drift.Digest(params),
		Start: map[string]string{"back_log": "123"}, Live: map[string]string{"max_connections": "77"}}
	f.expectStatusUpdate(db, st)
	f.run(ctx, ref(db), synced)

	f = newFixture(t)
	db, _ = engineParametersDatabase(t, f, newDatabase("orders", "mysql", "8.4", 1), params)
	db.Status = st
	want := desiredStatefulSet(t, db)
	if c := expectedStatefulSet(t, db).Spec.Template.Spec.Containers[0]; !slices.Equal(c.Args, []string{"--back_log=123"}) {
		t.Fatalf("server arguments %q, want back_log given at start", c.Args)
	}
	f.expectApply(statefulSetsResource, "default", "orders", want)
	f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
	f.run(ctx, ref(db), synced)
}

// A value a server accepted but cannot start with (huge_pages=on), on a
// single server: it crash-loops, no server serves to check the correction,
// and the correction goes to the pods unchecked, said in the condition,
// with no SQL; the next pass gives it to the StatefulSet.
func TestParametersCorrectedWhileNoServerServes(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.Status.Parameters = &dbv1alpha1.ParametersStatus{Applied: drift.Digest(map[string]string{"huge_pages": "on", "work_mem": "64MB"}),
		Start: map[string]string{"huge_pages": "on"}, Live: map[string]string{"work_mem": "64MB"}}
	db, pod := engineParametersDatabase(t, f, db, map[string]string{"huge_pages": "off", "work_mem": "64MB"})
	pod.Status.Conditions = nil
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "postgresql", RestartCount: 3,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}}
	st := withCondition(db, db.Status, metav1.Condition{Status: metav1.ConditionFalse, Reason: status.ReasonParametersPending,
		Message: "no server serves and orders-0 fails to start: the parameters read at start go to the pods unchecked, so that a corrected one reaches them; a server checks them all once one serves"})
	st.Parameters.Start = map[string]string{"huge_pages": "off"}
	f.expectStatusUpdate(db, st)
	f.run(ctx, ref(db), synced)
}

// A value the server refuses: nothing is set, the condition says so in
// the server's words, with one Warning event, and the same parameters are
// not asked again.
func TestParameterRejected(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	params := map[string]string{"work_mem": "lots", "max_connections": "200"}
	f := newFixture(t)
	db, _ := parametersDatabase(t, f, params)
	f.sql.Refuse = map[string]string{"work_mem": `invalid value for parameter "work_mem": "lots"`}
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.calls = []string{"check parameters on 192.0.2.10: max_connections=200 work_mem=lots"}
	msg := `orders-0 refused parameter work_mem = "lots": invalid value for parameter "work_mem": "lots". The servers run with the parameters they had; correct or remove it in spec.parameters`
	st := withCondition(db, db.Status, metav1.Condition{Status: metav1.ConditionFalse, Reason: status.ReasonParameterRejected, Message: msg})
	st.Parameters = &dbv1alpha1.ParametersStatus{Rejected: drift.Digest(params)}
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning ParameterRejected " + msg}
	f.run(ctx, ref(db), synced)
	if got := f.sql.Parameters["192.0.2.10"]; len(got) > 0 {
		t.Errorf("parameters set on the server: %v, want none", got)
	}

	f = newFixture(t)
	db, _ = parametersDatabase(t, f, params)
	db.Status = st
	f.run(ctx, ref(db), synced)
}

// A replicated Database: its primary checks, then every serving server
// takes the parameter, the primary first; one removed from the spec is
// reset on each.
func TestParametersReplicated(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 3)
	db.Spec.Parameters = map[string]string{"work_mem": "64MB"}
	f.convergedReplicated(db)
	db.Status.Parameters = &dbv1alpha1.ParametersStatus{Live: map[string]string{"work_mem": "32MB", "statement_timeout": "5s"}, Applied: "earlier"}
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.calls = append(probes(0, 1, 2),
		"check parameters on 192.0.2.10: work_mem=64MB",
		"set parameters on 192.0.2.10: work_mem=64MB; reset statement_timeout",
		"set parameters on 192.0.2.11: work_mem=64MB; reset statement_timeout",
		"set parameters on 192.0.2.12: work_mem=64MB; reset statement_timeout")
	st := withCondition(db, db.Status, metav1.Condition{Status: metav1.ConditionTrue, Reason: status.ReasonParametersApplied,
		Message: "the servers run with the 1 parameters asked for"})
	st.Parameters = &dbv1alpha1.ParametersStatus{Live: map[string]string{"work_mem": "64MB"}, Applied: drift.Digest(db.Spec.Parameters)}
	f.expectStatusUpdate(db, st)
	f.run(ctx, ref(db), pollServers)
}

// A server that does not answer (a pod address the controller cannot
// reach): the condition says so, nothing is recorded, and the pass comes
// back at the servers' pace, not in a hot loop.
func TestParametersServerUnreachable(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db, _ := parametersDatabase(t, f, map[string]string{"work_mem": "64MB"})
	delete(f.sql.Facts, "192.0.2.10")
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.calls = []string{"check parameters on 192.0.2.10: work_mem=64MB"}
	f.expectStatusUpdate(db, withCondition(db, db.Status, metav1.Condition{Status: metav1.ConditionFalse, Reason: status.ReasonParametersPending,
		Message: "spec.parameters wait for the servers to take them: dial tcp 192.0.2.10: connect: connection refused"}))
	f.run(ctx, ref(db), pollServers)
}

// Parameters from a ConfigMap labelled dbcontroller.io/parameters: its
// data under spec.parameters, which wins on the same name. One that is
// not found, or that sets what spec.parameters may not, is said in the
// condition with a Warning event, and no server is asked.
func TestParametersConfigMap(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	tuning := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pg-tuning", Namespace: "default", ResourceVersion: "3",
			Labels: map[string]string{dbv1alpha1.LabelParameters: "true"}}, Data: data}
	}
	t.Run("merged under spec.parameters", func(t *testing.T) {
		f := newFixture(t)
		db, _ := parametersDatabase(t, f, map[string]string{"work_mem": "64MB"})
		db.Spec.ParametersConfigMap = &dbv1alpha1.LocalConfigMapReference{Name: "pg-tuning"}
		f.seed(tuning(map[string]string{"work_mem": "8MB", "statement_timeout": "30s"}))
		want := map[string]string{"work_mem": "64MB", "statement_timeout": "30s"}
		f.expectGet(secretsResource, "default", "orders-credentials")
		f.calls = []string{"check parameters on 192.0.2.10: statement_timeout=30s work_mem=64MB", "set parameters on 192.0.2.10: statement_timeout=30s work_mem=64MB"}
		st := withCondition(db, db.Status, metav1.Condition{Status: metav1.ConditionTrue, Reason: status.ReasonParametersApplied,
			Message: "the servers run with the 2 parameters asked for"})
		st.Parameters = &dbv1alpha1.ParametersStatus{Applied: drift.Digest(want), Live: want}
		f.expectStatusUpdate(db, st)
		f.run(ctx, ref(db), synced)
	})
	for _, tc := range []struct {
		name      string
		configMap *corev1.ConfigMap
		reason    string
		message   string
	}{
		{"not found", nil, status.ReasonParametersConfigMapNotFound,
			"ConfigMap pg-tuning, named by spec.parametersConfigMap, is not among the ConfigMaps labelled dbcontroller.io/parameters=true, the only ones the controller reads: create it with that label, or label it (kubectl label configmap pg-tuning dbcontroller.io/parameters=true); the servers keep the parameters they have"},
		{"the controller's own", tuning(map[string]string{"work_mem": "8MB", "port": "5433"}), status.ReasonParameterRejected,
			"ConfigMap pg-tuning sets port: the controller sets it, for the pods, replication, archiving or TLS to work. The servers run with the parameters they had; correct or remove it in the ConfigMap"},
		{"a name not in lower case", tuning(map[string]string{"Work_Mem": "8MB"}), status.ReasonParameterRejected,
			"ConfigMap pg-tuning sets Work_Mem: parameters are named as the server names them, in lower case: letters, digits and '_', with one '.' for an extension's. The servers run with the parameters they had; correct or remove it in the ConfigMap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			db, _ := parametersDatabase(t, f, nil)
			db.Spec.ParametersConfigMap = &dbv1alpha1.LocalConfigMapReference{Name: "pg-tuning"}
			if tc.configMap != nil {
				f.seed(tc.configMap)
			}
			st := withCondition(db, db.Status, metav1.Condition{Status: metav1.ConditionFalse, Reason: tc.reason, Message: tc.message})
			f.expectStatusUpdate(db, st)
			f.events = []string{"Warning " + tc.reason + " " + tc.message}
			f.run(ctx, ref(db), synced)

			// Said already: no write, no event.
			f = newFixture(t)
			db, _ = parametersDatabase(t, f, nil)
			db.Spec.ParametersConfigMap = &dbv1alpha1.LocalConfigMapReference{Name: "pg-tuning"}
			db.Status = st
			if tc.configMap != nil {
				f.seed(tc.configMap)
			}
			f.run(ctx, ref(db), synced)
		})
	}
}

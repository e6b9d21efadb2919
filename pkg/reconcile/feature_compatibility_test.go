package reconcile

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
)

// After an upgrade of MongoDB has rolled out with every replica ready, a
// Job sets the featureCompatibilityVersion to the new series; the status
// records it, and until then the next series is refused.
func TestFeatureCompatibilityVersionIsSetAfterAnUpgrade(t *testing.T) {
	// upgraded is a Database that moved from 6.0 to 7.0: it runs 7.0, its
	// data is still at featureCompatibilityVersion 6.0.
	upgraded := func(f *fixture) *dbv1alpha1.Database {
		db := newDatabase("orders", "mongodb", "7.0", 1)
		f.converged(db)
		db.Status.FeatureCompatibilityVersion = "6.0"
		return db
	}
	job := func(t *testing.T, db *dbv1alpha1.Database) *batchv1.Job {
		j := &batchv1.Job{}
		if err := builder.Convert(builder.NewFeatureCompatibilityJob(db, profile(t, db), "mongo:7.0", "7.0", 1), j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	setting := metav1.Condition{Type: "FeatureCompatibility", Status: "False", Reason: "SettingFeatureCompatibilityVersion",
		Message: "setting featureCompatibilityVersion 7.0 with Job orders-fcv-7-0", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testNow)}

	t.Run("the Job is made", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := upgraded(f)
		f.expectCreate(actiontest.Jobs, job(t, db))
		st := db.Status.DeepCopy()
		st.Conditions = append(st.Conditions, setting)
		f.expectStatusUpdate(db, *st)
		f.events = []string{"Normal Created Created Job orders-fcv-7-0"}
		f.run(ctx, ref(db), synced)
	})

	t.Run("the Job completed: the status records it", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := upgraded(f)
		db.Status.Conditions = append(db.Status.Conditions, setting)
		j := job(t, db)
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		f.seed(j)
		st := db.Status.DeepCopy()
		st.FeatureCompatibilityVersion = "7.0"
		st.Conditions = st.Conditions[:2]
		f.expectStatusUpdate(db, *st)
		f.run(ctx, ref(db), synced)
	})

	t.Run("the Job failed: reported, deleted, made again", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := upgraded(f)
		j := job(t, db)
		j.UID = "job-uid"
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue,
			Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}
		f.seed(j)
		background := metav1.DeletePropagationBackground
		uid := types.UID("job-uid")
		f.kubeactions = append(f.kubeactions, core.NewDeleteActionWithOptions(actiontest.Jobs, "default", "orders-fcv-7-0",
			metav1.DeleteOptions{PropagationPolicy: &background, Preconditions: &metav1.Preconditions{UID: &uid}}))
		msg := "Job orders-fcv-7-0 could not set featureCompatibilityVersion 7.0 (BackoffLimitExceeded: Job has reached the specified backoff limit); it is made again. Its pod's log says why: kubectl logs -n default job/orders-fcv-7-0"
		st := db.Status.DeepCopy()
		st.Conditions = append(st.Conditions, metav1.Condition{Type: "FeatureCompatibility", Status: "False", Reason: "FeatureCompatibilityVersionFailed",
			Message: msg, ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(testNow)})
		f.expectStatusUpdate(db, *st)
		f.events = []string{"Warning FeatureCompatibilityVersionFailed " + msg}
		f.run(ctx, ref(db), synced)
	})

	t.Run("the next series waits for it, and the Job goes on", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := upgraded(f)
		db.Spec.Version = "8.0"
		db.Generation = 2
		f.seed(job(t, db)) // still running
		msg := "the data's featureCompatibilityVersion is 6.0, not 7.0, and MongoDB 8.0 will not start on it. The controller sets it to 7.0 once every replica runs 7.0 and is ready (status.featureCompatibilityVersion); until then set spec.version back to 7.0"
		st := wantStatus(db, "Failed", 1, 1, "7.0", "False", "FeatureCompatibilityPending", msg, "False", "FeatureCompatibilityPending", msg)
		st.FeatureCompatibilityVersion = "6.0"
		keepTransitionTime(&st, "Progressing")
		fc := setting
		fc.ObservedGeneration = 2
		st.Conditions = append(st.Conditions, fc)
		f.expectStatusUpdate(db, st)
		f.events = []string{"Warning FeatureCompatibilityPending " + msg}
		f.run(ctx, ref(db), needsPerson)
	})
}

package actiontest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/drift"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
	"github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned/fake"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/plan"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// Now is the time of the fixtures' fake clocks.
var Now = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// Password is the password generated from PasswordSource.
const Password = "AAAAAAAAAAAAAAAAAAAAAAAA"

// PasswordSource gives a fixed, known password: Password.
func PasswordSource() *bytes.Reader { return bytes.NewReader(make([]byte, 64)) }

// NewDatabase is a Database as the controller finds it after its first
// write: under deletionPolicy Retain it carries the controller's finalizer.
func NewDatabase(name string, engineName dbv1alpha1.Engine, version string, replicas int32) *dbv1alpha1.Database {
	return &dbv1alpha1.Database{
		TypeMeta: metav1.TypeMeta{APIVersion: dbv1alpha1.SchemeGroupVersion.String(), Kind: "Database"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       metav1.NamespaceDefault,
			UID:             types.UID(name + "-uid"),
			Generation:      1,
			ResourceVersion: "1",
			Finalizers:      []string{dbv1alpha1.FinalizerDatabase},
		},
		Spec: dbv1alpha1.DatabaseSpec{
			Engine:         engineName,
			Version:        version,
			Replicas:       ptr.To(replicas),
			Storage:        dbv1alpha1.StorageSpec{Size: resource.MustParse("1Gi")},
			DeletionPolicy: dbv1alpha1.DeletionPolicyRetain,
		},
	}
}

// Engine is db's engine.
func Engine(t testing.TB, db *dbv1alpha1.Database) engine.Engine {
	t.Helper()
	e, err := registry.Lookup(string(db.Spec.Engine))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Desired is the plan of a Database with nothing observed: its children as
// the controller creates them.
func Desired(t testing.TB, db *dbv1alpha1.Database) *plan.Plan {
	t.Helper()
	p := plan.Compute(db, plan.Observed{ToolsImage: ToolsImage})
	if p.Problem != nil {
		t.Fatal(p.Problem)
	}
	return p
}

// ToolsImage is the controller's --tools-image in the fixtures.
const ToolsImage = "registry.example/database-controller:v1"

// Object is the object an apply configuration (or any value) converts to.
func Object[T any](t testing.TB, from any) *T {
	t.Helper()
	out := new(T)
	if err := builder.Convert(from, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Secret is db's credentials Secret with password, as the controller creates it.
func Secret(t testing.TB, db *dbv1alpha1.Database, password string) *corev1.Secret {
	return Object[corev1.Secret](t, builder.NewSecret(db, Engine(t, db), password))
}

// HeadlessService, Service and StatefulSet are db's children as the
// controller creates them.
func HeadlessService(t testing.TB, db *dbv1alpha1.Database) *corev1.Service {
	return Object[corev1.Service](t, Desired(t, db).HeadlessService)
}

func Service(t testing.TB, db *dbv1alpha1.Database) *corev1.Service {
	return Object[corev1.Service](t, Desired(t, db).Service)
}

// A StatefulSet is created as generation 1 of its spec, and says it
// (drift.WrittenGenerationAnnotation).
func StatefulSet(t testing.TB, db *dbv1alpha1.Database) *appsv1.StatefulSet {
	sts := Object[appsv1.StatefulSet](t, Desired(t, db).StatefulSet)
	sts.Annotations[drift.WrittenGenerationAnnotation] = "1"
	return sts
}

// RolledOut marks sts as fully rolled out with n ready replicas.
func RolledOut(sts *appsv1.StatefulSet, n int32) *appsv1.StatefulSet {
	sts.Generation = 1
	sts.Status = appsv1.StatefulSetStatus{
		ObservedGeneration: 1, Replicas: n, ReadyReplicas: n, AvailableReplicas: n, UpdatedReplicas: n,
		CurrentRevision: "rev-1", UpdateRevision: "rev-1",
	}
	return sts
}

// Converged is what a Database that reached Running has: its children,
// rolled out, and its status as the controller last wrote it (an hour
// before Now), which it sets on db.
func Converged(t testing.TB, db *dbv1alpha1.Database) (sts *appsv1.StatefulSet, headless, svc *corev1.Service, secret *corev1.Secret) {
	secret = Secret(t, db, "rotated-by-user")
	headless = HeadlessService(t, db)
	svc = Service(t, db)
	sts = RolledOut(StatefulSet(t, db), db.Spec.DesiredReplicas())
	e := Engine(t, db)
	image, _ := e.Image(db.Spec.Version, db.Spec.Image)
	db.Status = status.Compute(status.Input{Database: db, Endpoint: names.Endpoint(db, e.Runtime().Port), StatefulSet: sts, Image: image,
		EndOfLife: e.EndOfLife(db.Spec.Version), NewFeatureCompatibilityVersion: e.FeatureCompatibilityVersion(db.Spec.Version),
		Now: metav1.NewTime(Now.Add(-time.Hour))})
	return sts, headless, svc, secret
}

// WantStatus is the status the controller must write, at Now. It is spelled
// out rather than computed, so tests of it do not trust status.Compute.
func WantStatus(db *dbv1alpha1.Database, phase dbv1alpha1.Phase, replicas, ready int32, currentVersion string,
	readyStatus metav1.ConditionStatus, readyReason, readyMsg string,
	progStatus metav1.ConditionStatus, progReason, progMsg string) dbv1alpha1.DatabaseStatus {
	now := metav1.NewTime(Now)
	port := map[dbv1alpha1.Engine]string{"postgresql": "5432", "mysql": "3306", "mongodb": "27017"}[db.Spec.Engine]
	return dbv1alpha1.DatabaseStatus{
		Phase:              phase,
		Replicas:           replicas,
		ReadyReplicas:      ready,
		CurrentVersion:     currentVersion,
		Endpoint:           db.Name + ".default.svc:" + port,
		CredentialsSecret:  db.Name + "-credentials",
		Selector:           "app.kubernetes.io/instance=" + db.Name + ",app.kubernetes.io/name=" + string(db.Spec.Engine),
		ObservedGeneration: db.Generation,
		Conditions: []metav1.Condition{
			{Type: "Ready", Status: readyStatus, Reason: readyReason, Message: readyMsg, ObservedGeneration: db.Generation, LastTransitionTime: now},
			{Type: "Progressing", Status: progStatus, Reason: progReason, Message: progMsg, ObservedGeneration: db.Generation, LastTransitionTime: now},
		},
	}
}

// Provisioning is the status the controller writes when it has just made
// db's children: Provisioning, no replica ready yet.
func Provisioning(db *dbv1alpha1.Database) dbv1alpha1.DatabaseStatus {
	n := db.Spec.DesiredReplicas()
	return WantStatus(db, "Provisioning", 0, 0, "",
		"False", "ReplicasNotReady", fmt.Sprintf("0/%d replicas are ready", n),
		"True", "Provisioning", fmt.Sprintf("waiting for 0/%d replicas to become ready", n))
}

// StatusApply is the server-side apply of st as db's status.
func StatusApply(t testing.TB, db *dbv1alpha1.Database, st dbv1alpha1.DatabaseStatus) core.Action {
	t.Helper()
	body := map[string]any{}
	if err := builder.Convert(st, &body); err != nil {
		t.Fatal(err)
	}
	return ApplyStatus(t, Databases, db.Namespace, db.Name, map[string]any{
		"apiVersion": "dbcontroller.io/v1alpha1",
		"kind":       "Database",
		"metadata":   map[string]any{"name": db.Name, "namespace": db.Namespace},
		"status":     body,
	})
}

// KeepTransitionTime sets a condition's LastTransitionTime to when
// Converged last changed it: a condition whose status does not change
// keeps its time.
func KeepTransitionTime(st *dbv1alpha1.DatabaseStatus, condType string) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == condType {
			st.Conditions[i].LastTransitionTime = metav1.NewTime(Now.Add(-time.Hour))
		}
	}
}

// AcceptStatusApply makes client take server-side applies of Database
// status, which its generated fake has no schema for: the apply is
// recorded as an action either way, and answers the applied Database.
func AcceptStatusApply(client *fake.Clientset) {
	client.PrependReactor("patch", "databases", func(a core.Action) (bool, runtime.Object, error) {
		p := a.(core.PatchAction)
		if p.GetPatchType() != types.ApplyPatchType || p.GetSubresource() != "status" {
			return false, nil, nil
		}
		obj := &dbv1alpha1.Database{}
		return true, obj, json.Unmarshal(p.GetPatch(), obj)
	})
}

// NamespaceTerminating is the API server's refusal of a create in a
// namespace being deleted, as a reactor answers it.
func NamespaceTerminating(resource schema.GroupResource, name string) error {
	err := apierrors.NewForbidden(resource, name,
		errors.New("unable to create new content in namespace default because it is being terminated"))
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace default is being terminated"}}
	return err
}

package reconcile

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
)

func TestStorageGrowthExpandsClaims(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	// Two independent servers (MongoDB, stored before the API refused
	// more than one): no replication to ask.
	db := newDatabase("orders", "mongodb", "7.0", 2)
	f.converged(db)
	db.Spec.Storage.Size = resource.MustParse("5Gi")
	db.Generation = 2
	other := claim(db, 0, "1Gi")
	other.Name = "scratch-orders-0" // not a data claim of this StatefulSet
	f.seed(claim(db, 0, "1Gi"), claim(db, 1, "5Gi"), other)

	patch := []byte(`{"spec":{"resources":{"requests":{"storage":"5Gi"}}}}`)
	f.kubeactions = append(f.kubeactions, core.NewPatchAction(
		actiontest.Claims, "default", "data-orders-0", types.MergePatchType, patch))
	st := db.Status.DeepCopy()
	st.ObservedGeneration = 2
	for i := range st.Conditions {
		st.Conditions[i].ObservedGeneration = 2
	}
	f.expectStatusUpdate(db, *st)
	f.events = []string{"Normal Updated Requested 5Gi for PersistentVolumeClaim data-orders-0 (was 1Gi)"}
	f.run(ctx, ref(db), synced)
}

func TestStorageGrowthRefusedByTheClusterIsReported(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.converged(db)
	db.Spec.Storage.Size = resource.MustParse("5Gi")
	f.seed(claim(db, 0, "1Gi"))
	r, recorder := f.newReconciler()
	f.kubeclient.PrependReactor("patch", "persistentvolumeclaims", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, "data-orders-0",
			errors.New("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"))
	})
	f.kubeactions = append(f.kubeactions, core.NewPatchAction(
		actiontest.Claims, "default", "data-orders-0", types.MergePatchType,
		[]byte(`{"spec":{"resources":{"requests":{"storage":"5Gi"}}}}`)))
	msg := `cannot grow PersistentVolumeClaim data-orders-0 from 1Gi to 5Gi: persistentvolumeclaims "data-orders-0" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize; the database keeps running on its current volumes`
	st := wantStatus(db, "Failed", 1, 1, "16", "False", "StorageResizeFailed", msg, "False", "StorageResizeFailed", msg)
	keepTransitionTime(&st, "Progressing")
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning StorageResizeFailed " + msg}
	f.syncAndCheck(ctx, r, recorder, ref(db), needsPerson)
}

// A growth the cluster refused is not sent again while neither the claim
// nor the size changes: a stuck Database costs no writes.
func TestRefusedGrowthIsNotSentAgain(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.converged(db)
	db.Spec.Storage.Size = resource.MustParse("5Gi")
	pvc := claim(db, 0, "1Gi")
	pvc.ResourceVersion = "7"
	f.seed(pvc)
	r, recorder := f.newReconciler()
	f.kubeclient.PrependReactor("patch", "persistentvolumeclaims", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, "data-orders-0",
			errors.New("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"))
	})
	claims := actiontest.Claims
	patch := []byte(`{"spec":{"resources":{"requests":{"storage":"5Gi"}}}}`)
	f.kubeactions = append(f.kubeactions, core.NewPatchAction(claims, "default", "data-orders-0", types.MergePatchType, patch))
	msg := `cannot grow PersistentVolumeClaim data-orders-0 from 1Gi to 5Gi: persistentvolumeclaims "data-orders-0" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize; the database keeps running on its current volumes`
	st := wantStatus(db, "Failed", 1, 1, "16", "False", "StorageResizeFailed", msg, "False", "StorageResizeFailed", msg)
	keepTransitionTime(&st, "Progressing")
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning StorageResizeFailed " + msg}
	f.syncAndCheck(ctx, r, recorder, ref(db), needsPerson)

	// With that status stored, later syncs write nothing.
	stored := db.DeepCopy()
	stored.Status = st
	if err := f.databases.Update(stored); err != nil {
		t.Fatal(err)
	}
	f.actions, f.kubeactions, f.events = nil, nil, nil
	f.syncAndCheck(ctx, r, recorder, ref(db), needsPerson)

	// The claim changed (someone edited it): one more try.
	changed := pvc.DeepCopy()
	changed.ResourceVersion = "8"
	if err := f.caches.Claims.Update(changed); err != nil {
		t.Fatal(err)
	}
	f.kubeactions = append(f.kubeactions, core.NewPatchAction(claims, "default", "data-orders-0", types.MergePatchType, patch))
	f.syncAndCheck(ctx, r, recorder, ref(db), needsPerson)
}

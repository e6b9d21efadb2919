package reconcile

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
)

// A child created with a POST has the controller's fields under an Update
// entry: the first repair hands them to the apply (one JSON patch) and
// applies again, so that a field the plan dropped goes; once handed over,
// a repair is one apply.
func TestRepairHandsCreatedFieldsToTheApply(t *testing.T) {
	created := metav1.ManagedFieldsEntry{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}}
	applied := metav1.ManagedFieldsEntry{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}}
	for _, tc := range []struct {
		name      string
		managed   []metav1.ManagedFieldsEntry
		conflicts int // hand-over patches refused for a changed resourceVersion
		wantVerbs []string
	}{
		{"fields set at creation: handed over, applied again", []metav1.ManagedFieldsEntry{created, applied}, 0, []string{"patch", "patch", "patch"}},
		{"already handed over: one apply", []metav1.ManagedFieldsEntry{applied}, 0, []string{"patch"}},
		{"the object changed between the apply and the hand-over: applied and handed over again", []metav1.ManagedFieldsEntry{created, applied}, 1,
			[]string{"patch", "patch", "patch", "patch", "patch"}},
		{"it keeps changing: the apply stands, the hand-over waits for the next repair", []metav1.ManagedFieldsEntry{created, applied}, ownAllAttempts,
			[]string{"patch", "patch", "patch", "patch", "patch", "patch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			applies, refused, handed := 0, 0, false
			var kinds []types.PatchType
			client.PrependReactor("patch", "statefulsets", func(a core.Action) (bool, runtime.Object, error) {
				p := a.(core.PatchAction)
				kinds = append(kinds, p.GetPatchType())
				sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "default", ResourceVersion: "3"}}
				switch {
				case p.GetPatchType() == types.JSONPatchType && refused < tc.conflicts:
					refused++
					return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "orders", errors.New("the object has been modified"))
				case p.GetPatchType() == types.JSONPatchType:
					handed = true
				case p.GetPatchType() == types.ApplyPatchType:
					applies++
					if !handed {
						sts.ManagedFields = tc.managed
					} else {
						sts.ManagedFields = []metav1.ManagedFieldsEntry{applied}
					}
				}
				return true, sts, nil
			})
			a := statefulSetAdapter{client: client}
			if _, err := a.repair(context.Background(), appsv1ac.StatefulSet("orders", "default")); err != nil {
				t.Fatal(err)
			}
			var verbs []string
			for _, act := range client.Actions() {
				verbs = append(verbs, act.GetVerb())
			}
			if len(verbs) != len(tc.wantVerbs) {
				t.Fatalf("actions %v, want %v", verbs, tc.wantVerbs)
			}
			if len(kinds) == 3 && (kinds[0] != types.ApplyPatchType || kinds[1] != types.JSONPatchType || kinds[2] != types.ApplyPatchType) {
				t.Errorf("patches %v, want apply, JSON patch, apply", kinds)
			}
		})
	}
}

package reconcile

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
		wantVerbs []string
	}{
		{"fields set at creation: handed over, applied again", []metav1.ManagedFieldsEntry{created, applied}, []string{"patch", "patch", "patch"}},
		{"already handed over: one apply", []metav1.ManagedFieldsEntry{applied}, []string{"patch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			applies := 0
			var kinds []types.PatchType
			client.PrependReactor("patch", "statefulsets", func(a core.Action) (bool, runtime.Object, error) {
				p := a.(core.PatchAction)
				kinds = append(kinds, p.GetPatchType())
				sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "default", ResourceVersion: "3"}}
				if p.GetPatchType() == types.ApplyPatchType {
					applies++
					if applies == 1 {
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

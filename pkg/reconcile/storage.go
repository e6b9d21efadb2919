package reconcile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dbcontroller/database-controller/pkg/status"
)

// refusedGrowth is a growth the cluster refused: of which claim version, to
// which size, and the problem reported.
type refusedGrowth struct {
	resourceVersion, size string
	problem               *status.Problem
}

// growClaims raises the storage request of every data volume claim the plan
// lists. A claim the cluster refuses to resize (its StorageClass does not
// allow expansion) is a problem for a person, and the refused patch is not
// sent again while the claim and the size stay the same (for at most an
// hour, so that a StorageClass that now allows expansion is seen).
func (p *pass) growClaims(ctx context.Context) error {
	r, db := p.r, p.db
	for _, g := range p.plan.Grow {
		key := ChildKey{Kind: "PersistentVolumeClaim", Namespace: db.Namespace, Name: g.Name}
		if refused, ok := r.refusedGrowth.Get(key); ok && refused.resourceVersion == g.ResourceVersion && refused.size == g.To.String() {
			return refused.problem
		}
		patch := fmt.Appendf(nil, `{"spec":{"resources":{"requests":{"storage":%q}}}}`, g.To.String())
		_, err := r.kube.CoreV1().PersistentVolumeClaims(db.Namespace).Patch(ctx, g.Name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: FieldManager})
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			problem := &status.Problem{Reason: status.ReasonStorageResizeFailed, Message: fmt.Sprintf(
				"cannot grow PersistentVolumeClaim %s from %s to %s: %s; the database keeps running on its current volumes",
				g.Name, g.From.String(), g.To.String(), apiMessage(err))}
			r.refusedGrowth.Put(key, refusedGrowth{resourceVersion: g.ResourceVersion, size: g.To.String(), problem: problem})
			return problem
		case err != nil:
			return fmt.Errorf("growing PersistentVolumeClaim %s: %w", g.Name, err)
		}
		r.refusedGrowth.Remove(key)
		r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated, "Requested %s for PersistentVolumeClaim %s (was %s)", g.To.String(), g.Name, g.From.String())
	}
	return nil
}

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

// growClaims raises the storage request of every data volume claim the plan
// lists. A claim the cluster refuses to resize (its StorageClass does not
// allow expansion) is a problem for a person.
func (p *pass) growClaims(ctx context.Context) error {
	r, db := p.r, p.db
	for _, g := range p.plan.Grow {
		patch := fmt.Appendf(nil, `{"spec":{"resources":{"requests":{"storage":%q}}}}`, g.To.String())
		_, err := r.kube.CoreV1().PersistentVolumeClaims(db.Namespace).Patch(ctx, g.Name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: FieldManager})
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			return &status.Problem{Reason: status.ReasonStorageResizeFailed, Message: fmt.Sprintf(
				"cannot grow PersistentVolumeClaim %s from %s to %s: %s; the database keeps running on its current volumes",
				g.Name, g.From.String(), g.To.String(), apiMessage(err))}
		case err != nil:
			return fmt.Errorf("growing PersistentVolumeClaim %s: %w", g.Name, err)
		}
		r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated, "Requested %s for PersistentVolumeClaim %s (was %s)", g.To.String(), g.Name, g.From.String())
	}
	return nil
}

package builder

import (
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// NewService builds the client Service. With primaryOnly, it routes only to
// the pod labelled primary: a replicated Database's clients always write to
// the one primary.
func NewService(db *dbv1alpha1.Database, e engine.Engine, primaryOnly bool) *corev1ac.ServiceApplyConfiguration {
	selector := names.SelectorLabels(db)
	if primaryOnly {
		selector = names.RoleSelectorLabels(db, dbv1alpha1.RolePrimary)
	}
	return corev1ac.Service(names.ServiceName(db), db.Namespace).
		WithLabels(names.Labels(db)).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(selector).
			WithPorts(servicePort(e.Runtime())))
}

// NewReadOnlyService builds the read-only Service of a replicated Database:
// it routes to the pods labelled replica, which serve reads.
func NewReadOnlyService(db *dbv1alpha1.Database, e engine.Engine) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(names.ReadOnlyServiceName(db), db.Namespace).
		WithLabels(names.Labels(db)).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(names.RoleSelectorLabels(db, dbv1alpha1.RoleReplica)).
			WithPorts(servicePort(e.Runtime())))
}

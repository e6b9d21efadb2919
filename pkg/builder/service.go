package builder

import (
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// NewService builds the client Service.
func NewService(db *dbv1alpha1.Database, e engine.Engine) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(names.ServiceName(db), db.Namespace).
		WithLabels(names.Labels(db)).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(names.SelectorLabels(db)).
			WithPorts(servicePort(e.Runtime())))
}

package builder

import (
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// NewHeadlessService builds the Service that gives each pod a stable DNS
// name. It publishes pods before they are ready, so that peers can find them.
func NewHeadlessService(db *dbv1alpha1.Database, e engine.Engine) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(names.HeadlessServiceName(db), db.Namespace).
		WithLabels(names.Labels(db)).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(names.SelectorLabels(db)).
			WithPorts(servicePort(e.Runtime())))
}

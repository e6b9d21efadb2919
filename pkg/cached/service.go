package cached

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Service is what the informer cache holds of a Service: its metadata,
// and of its spec what the builder sets and the drift check compares (its
// type, cluster IP, selector, ports and whether it publishes addresses
// not ready), in 304 bytes where the Service type takes 640, its
// annotations apart (Meta).
type Service struct {
	metav1.TypeMeta
	Meta
	serviceType              corev1.ServiceType
	clusterIP                string
	selector                 map[string]string
	ports                    []corev1.ServicePort
	publishNotReadyAddresses bool
}

// NewService returns what the informer cache holds of s. It shares s's
// fields.
func NewService(s *corev1.Service) *Service {
	return &Service{TypeMeta: s.TypeMeta, Meta: newMeta(s.ObjectMeta), serviceType: s.Spec.Type, clusterIP: s.Spec.ClusterIP,
		selector: s.Spec.Selector, ports: s.Spec.Ports, publishNotReadyAddresses: s.Spec.PublishNotReadyAddresses}
}

// Service returns the Service c stands for, with only the fields c holds.
func (c *Service) Service() *corev1.Service {
	return &corev1.Service{TypeMeta: c.TypeMeta, ObjectMeta: c.objectMeta(), Spec: corev1.ServiceSpec{Type: c.serviceType,
		ClusterIP: c.clusterIP, Selector: c.selector, Ports: c.ports, PublishNotReadyAddresses: c.publishNotReadyAddresses}}
}

// Object is the Service c stands for.
func (c *Service) Object() runtime.Object { return c.Service() }

// DeepCopyObject makes c a runtime.Object, which client-go's cache
// mutation detector checks.
func (c *Service) DeepCopyObject() runtime.Object { return NewService(c.Service().DeepCopy()) }

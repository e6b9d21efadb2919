package cached

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Pod is what the informer cache holds of a pod: its metadata, its node,
// and of its status what the causes and the servers' addresses read (its
// phase, conditions, addresses and containers' states), in 360 bytes
// where the Pod type takes 1,280, its annotations apart (Meta). The rest
// of its spec is its StatefulSet's template, read there.
type Pod struct {
	metav1.TypeMeta
	Meta
	nodeName                                 string
	phase                                    corev1.PodPhase
	podIP                                    string
	podIPs                                   []corev1.PodIP
	conditions                               []corev1.PodCondition
	initContainerStatuses, containerStatuses []corev1.ContainerStatus
}

// NewPod returns what the informer cache holds of p. It shares p's fields.
func NewPod(p *corev1.Pod) *Pod {
	return &Pod{TypeMeta: p.TypeMeta, Meta: newMeta(p.ObjectMeta), nodeName: p.Spec.NodeName, phase: p.Status.Phase, podIP: p.Status.PodIP,
		podIPs: p.Status.PodIPs, conditions: p.Status.Conditions,
		initContainerStatuses: p.Status.InitContainerStatuses, containerStatuses: p.Status.ContainerStatuses}
}

// Pod returns the pod c stands for, with only the fields c holds.
func (c *Pod) Pod() *corev1.Pod {
	return &corev1.Pod{TypeMeta: c.TypeMeta, ObjectMeta: c.objectMeta(), Spec: corev1.PodSpec{NodeName: c.nodeName},
		Status: corev1.PodStatus{Phase: c.phase, PodIP: c.podIP, PodIPs: c.podIPs, Conditions: c.conditions,
			InitContainerStatuses: c.initContainerStatuses, ContainerStatuses: c.containerStatuses}}
}

// Object is the pod c stands for.
func (c *Pod) Object() runtime.Object { return c.Pod() }

// DeepCopyObject makes c a runtime.Object, which client-go's cache
// mutation detector checks.
func (c *Pod) DeepCopyObject() runtime.Object { return NewPod(c.Pod().DeepCopy()) }

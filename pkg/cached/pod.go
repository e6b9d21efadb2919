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
	initContainerStatuses, containerStatuses []containerStatus
}

// containerStatus is what a compact pod holds of a container's status:
// what stripForCache keeps (its state and the one before, whether it
// started and is ready, its restarts and image), in 96 bytes where the
// ContainerStatus type takes 208.
type containerStatus struct {
	name, image      string
	state, lastState corev1.ContainerState
	started          *bool
	restartCount     int32
	ready            bool
}

// compactStatuses is what a compact pod holds of in; nil when empty.
func compactStatuses(in []corev1.ContainerStatus) []containerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]containerStatus, len(in))
	for i, c := range in {
		out[i] = containerStatus{name: c.Name, image: c.Image, state: c.State, lastState: c.LastTerminationState,
			started: c.Started, restartCount: c.RestartCount, ready: c.Ready}
	}
	return out
}

// wholeStatuses are the container statuses in stands for; nil when none.
func wholeStatuses(in []containerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, c := range in {
		out[i] = corev1.ContainerStatus{Name: c.name, Image: c.image, State: c.state, LastTerminationState: c.lastState,
			Started: c.started, RestartCount: c.restartCount, Ready: c.ready}
	}
	return out
}

// NewPod returns what the informer cache holds of p, which stripForCache
// stripped. It shares p's fields but its containers' statuses.
func NewPod(p *corev1.Pod) *Pod {
	return &Pod{TypeMeta: p.TypeMeta, Meta: newMeta(p.ObjectMeta), nodeName: p.Spec.NodeName, phase: p.Status.Phase, podIP: p.Status.PodIP,
		podIPs: p.Status.PodIPs, conditions: p.Status.Conditions,
		initContainerStatuses: compactStatuses(p.Status.InitContainerStatuses), containerStatuses: compactStatuses(p.Status.ContainerStatuses)}
}

// Pod returns the pod c stands for, with only the fields c holds.
func (c *Pod) Pod() *corev1.Pod {
	return &corev1.Pod{TypeMeta: c.TypeMeta, ObjectMeta: c.objectMeta(), Spec: corev1.PodSpec{NodeName: c.nodeName},
		Status: corev1.PodStatus{Phase: c.phase, PodIP: c.podIP, PodIPs: c.podIPs, Conditions: c.conditions,
			InitContainerStatuses: wholeStatuses(c.initContainerStatuses), ContainerStatuses: wholeStatuses(c.containerStatuses)}}
}

// Object is the pod c stands for.
func (c *Pod) Object() runtime.Object { return c.Pod() }

// DeepCopyObject makes c a runtime.Object, which client-go's cache
// mutation detector checks.
func (c *Pod) DeepCopyObject() runtime.Object { return NewPod(c.Pod().DeepCopy()) }

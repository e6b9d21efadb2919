package cached

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Pod is what the informer cache holds of a pod: its metadata, its node,
// and of its status what the causes and the servers' addresses read (its
// phase, conditions, addresses and containers' states), in 376 bytes
// where the Pod type takes 1,280, its annotations apart (Meta). The rest
// of its spec is its StatefulSet's template, read there.
type Pod struct {
	metav1.TypeMeta
	Meta
	nodeName                                 string
	phase                                    corev1.PodPhase
	podIP                                    string
	podIPs                                   []corev1.PodIP
	conditions                               []podCondition
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

// podCondition is what a compact pod holds of a condition: what
// stripForCache keeps (its type, status, reason, message and when it last
// changed), in 88 bytes where the PodCondition type takes 120.
type podCondition struct {
	typ                corev1.PodConditionType
	status             corev1.ConditionStatus
	reason, message    string
	lastTransitionTime metav1.Time
}

// each is f of each of in, in order; nil when in is empty.
func each[In, Out any](in []In, f func(In) Out) []Out {
	if len(in) == 0 {
		return nil
	}
	out := make([]Out, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

func compactStatus(c corev1.ContainerStatus) containerStatus {
	return containerStatus{name: c.Name, image: c.Image, state: c.State, lastState: c.LastTerminationState,
		started: c.Started, restartCount: c.RestartCount, ready: c.Ready}
}

func wholeStatus(c containerStatus) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: c.name, Image: c.image, State: c.state, LastTerminationState: c.lastState,
		Started: c.started, RestartCount: c.restartCount, Ready: c.ready}
}

func compactCondition(c corev1.PodCondition) podCondition {
	return podCondition{typ: c.Type, status: c.Status, reason: c.Reason, message: c.Message, lastTransitionTime: c.LastTransitionTime}
}

func wholeCondition(c podCondition) corev1.PodCondition {
	return corev1.PodCondition{Type: c.typ, Status: c.status, Reason: c.reason, Message: c.message, LastTransitionTime: c.lastTransitionTime}
}

// NewPod returns what the informer cache holds of p, which stripForCache
// stripped. It shares p's fields but its conditions' and containers'
// statuses.
func NewPod(p *corev1.Pod) *Pod {
	return &Pod{TypeMeta: p.TypeMeta, Meta: newMeta(p.ObjectMeta), nodeName: p.Spec.NodeName, phase: p.Status.Phase, podIP: p.Status.PodIP,
		podIPs: p.Status.PodIPs, conditions: each(p.Status.Conditions, compactCondition),
		initContainerStatuses: each(p.Status.InitContainerStatuses, compactStatus), containerStatuses: each(p.Status.ContainerStatuses, compactStatus)}
}

// Pod returns the pod c stands for, with only the fields c holds.
func (c *Pod) Pod() *corev1.Pod {
	return &corev1.Pod{TypeMeta: c.TypeMeta, ObjectMeta: c.objectMeta(), Spec: corev1.PodSpec{NodeName: c.nodeName},
		Status: corev1.PodStatus{Phase: c.phase, PodIP: c.podIP, PodIPs: c.podIPs, Conditions: each(c.conditions, wholeCondition),
			InitContainerStatuses: each(c.initContainerStatuses, wholeStatus), ContainerStatuses: each(c.containerStatuses, wholeStatus)}}
}

// NodeName is the name of the node the pod is scheduled to; "" when none.
func (c *Pod) NodeName() string { return c.nodeName }

// Addresses are the pod's addresses (PodAddresses).
func (c *Pod) Addresses() []string { return addresses(c.podIPs, c.podIP) }

// PodAddresses are p's addresses: its PodIPs, or its PodIP when it has no
// PodIPs; nil when it has none.
func PodAddresses(p *corev1.Pod) []string { return addresses(p.Status.PodIPs, p.Status.PodIP) }

func addresses(podIPs []corev1.PodIP, podIP string) []string {
	if len(podIPs) > 0 {
		return each(podIPs, func(ip corev1.PodIP) string { return ip.IP })
	}
	if podIP != "" {
		return []string{podIP}
	}
	return nil
}

// Object is the pod c stands for.
func (c *Pod) Object() runtime.Object { return c.Pod() }

// DeepCopyObject makes c a runtime.Object, which client-go's cache
// mutation detector checks.
func (c *Pod) DeepCopyObject() runtime.Object { return NewPod(c.Pod().DeepCopy()) }

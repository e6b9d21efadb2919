package cached

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// PersistentVolumeClaim is what the informer cache holds of a claim: what
// names it (its metadata, with no annotations: stripForCache drops the
// provisioner's), its volume, the size asked and whether it is bound, in
// 272 bytes where the PersistentVolumeClaim type takes 488.
type PersistentVolumeClaim struct {
	metav1.TypeMeta
	Meta
	volumeName string
	requests   corev1.ResourceList
	phase      corev1.PersistentVolumeClaimPhase
}

// NewPersistentVolumeClaim returns what the informer cache holds of c. It
// shares c's fields.
func NewPersistentVolumeClaim(c *corev1.PersistentVolumeClaim) *PersistentVolumeClaim {
	return &PersistentVolumeClaim{TypeMeta: c.TypeMeta, Meta: newMeta(c.ObjectMeta), volumeName: c.Spec.VolumeName,
		requests: c.Spec.Resources.Requests, phase: c.Status.Phase}
}

// PersistentVolumeClaim returns the claim c stands for, with only the
// fields c holds.
func (c *PersistentVolumeClaim) PersistentVolumeClaim() *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{TypeMeta: c.TypeMeta, ObjectMeta: c.objectMeta(),
		Spec:   corev1.PersistentVolumeClaimSpec{VolumeName: c.volumeName, Resources: corev1.VolumeResourceRequirements{Requests: c.requests}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: c.phase}}
}

// Object is the claim c stands for.
func (c *PersistentVolumeClaim) Object() runtime.Object { return c.PersistentVolumeClaim() }

// DeepCopyObject makes c a runtime.Object, which client-go's cache
// mutation detector checks.
func (c *PersistentVolumeClaim) DeepCopyObject() runtime.Object {
	return NewPersistentVolumeClaim(c.PersistentVolumeClaim().DeepCopy())
}

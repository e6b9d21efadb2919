package cached

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Secret is what the informer cache holds of a Secret: its metadata, its
// type and whether it is immutable; never its data (stripForCache drops
// it, so that credentials never sit in the cache). The controller decides
// from the annotations of its TLS Secrets (builder.AnnotationSerial and
// the rest).
type Secret struct {
	metav1.TypeMeta
	Meta
	immutable  *bool
	secretType corev1.SecretType
}

// NewSecret returns what the informer cache holds of s, whose data was
// dropped. It shares s's fields.
func NewSecret(s *corev1.Secret) *Secret {
	return &Secret{TypeMeta: s.TypeMeta, Meta: newMeta(s.ObjectMeta), immutable: s.Immutable, secretType: s.Type}
}

// Secret returns the Secret c stands for, with no data.
func (c *Secret) Secret() *corev1.Secret {
	return &corev1.Secret{TypeMeta: c.TypeMeta, ObjectMeta: c.objectMeta(), Immutable: c.immutable, Type: c.secretType}
}

// Object is the Secret c stands for.
func (c *Secret) Object() runtime.Object { return c.Secret() }

// DeepCopyObject makes c a runtime.Object, which client-go's cache
// mutation detector checks.
func (c *Secret) DeepCopyObject() runtime.Object { return NewSecret(c.Secret().DeepCopy()) }

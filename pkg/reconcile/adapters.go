package reconcile

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/dbcontroller/database-controller/pkg/builder"
)

var (
	// repairOptions force the controller's fields back: it owns them.
	repairOptions = metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	createOptions = metav1.CreateOptions{FieldManager: FieldManager}
)

// childAdapter is how ensureChild reads and writes one kind of child, of
// type T, desired as an apply configuration AC.
type childAdapter[T metav1.Object, AC any] interface {
	// kind names the kind in events and messages.
	kind() string
	// cached reads the child from the informer cache.
	cached(namespace, name string) (T, error)
	// live reads the child from the API server, for what the filtered
	// cache cannot see.
	live(ctx context.Context, namespace, name string) (T, error)
	// create makes the child; it fails with AlreadyExists on a taken name.
	create(ctx context.Context, desired AC) (T, error)
	// repair puts the controller's fields back with server-side apply,
	// leaving the fields others set alone.
	repair(ctx context.Context, desired AC) (T, error)
}

// serviceAdapter reads and writes Services.
type serviceAdapter struct {
	client kubernetes.Interface
	lister corelisters.ServiceLister
}

var _ childAdapter[*corev1.Service, *corev1ac.ServiceApplyConfiguration] = serviceAdapter{}

func (serviceAdapter) kind() string { return "Service" }

func (a serviceAdapter) cached(namespace, name string) (*corev1.Service, error) {
	return a.lister.Services(namespace).Get(name)
}

func (a serviceAdapter) live(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	return a.client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a serviceAdapter) create(ctx context.Context, desired *corev1ac.ServiceApplyConfiguration) (*corev1.Service, error) {
	obj := &corev1.Service{}
	if err := builder.Convert(desired, obj); err != nil {
		return nil, err
	}
	return a.client.CoreV1().Services(*desired.Namespace).Create(ctx, obj, createOptions)
}

func (a serviceAdapter) repair(ctx context.Context, desired *corev1ac.ServiceApplyConfiguration) (*corev1.Service, error) {
	return a.client.CoreV1().Services(*desired.Namespace).Apply(ctx, desired, repairOptions)
}

// statefulSetAdapter reads and writes StatefulSets.
type statefulSetAdapter struct {
	client kubernetes.Interface
	lister appslisters.StatefulSetLister
}

var _ childAdapter[*appsv1.StatefulSet, *appsv1ac.StatefulSetApplyConfiguration] = statefulSetAdapter{}

func (statefulSetAdapter) kind() string { return "StatefulSet" }

func (a statefulSetAdapter) cached(namespace, name string) (*appsv1.StatefulSet, error) {
	return a.lister.StatefulSets(namespace).Get(name)
}

func (a statefulSetAdapter) live(ctx context.Context, namespace, name string) (*appsv1.StatefulSet, error) {
	return a.client.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a statefulSetAdapter) create(ctx context.Context, desired *appsv1ac.StatefulSetApplyConfiguration) (*appsv1.StatefulSet, error) {
	obj := &appsv1.StatefulSet{}
	if err := builder.Convert(desired, obj); err != nil {
		return nil, err
	}
	return a.client.AppsV1().StatefulSets(*desired.Namespace).Create(ctx, obj, createOptions)
}

func (a statefulSetAdapter) repair(ctx context.Context, desired *appsv1ac.StatefulSetApplyConfiguration) (*appsv1.StatefulSet, error) {
	return a.client.AppsV1().StatefulSets(*desired.Namespace).Apply(ctx, desired, repairOptions)
}

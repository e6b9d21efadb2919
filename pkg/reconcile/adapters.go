package reconcile

import (
	"context"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/klog/v2"

	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/drift"
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
	// cached reads the child from the informer cache, through the pass's reader.
	cached(r *reader, namespace, name string) (T, error)
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
}

var _ childAdapter[*corev1.Service, *corev1ac.ServiceApplyConfiguration] = serviceAdapter{}

func (serviceAdapter) kind() string { return "Service" }

func (serviceAdapter) cached(r *reader, namespace, name string) (*corev1.Service, error) {
	return r.service(namespace, name)
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
	services := a.client.CoreV1().Services(*desired.Namespace)
	return applyOwningAll(ctx,
		func() (*corev1.Service, error) { return services.Apply(ctx, desired, repairOptions) },
		func(patch []byte) error {
			_, err := services.Patch(ctx, *desired.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
			return err
		})
}

// statefulSetAdapter reads and writes StatefulSets.
type statefulSetAdapter struct {
	client kubernetes.Interface
}

var _ childAdapter[*appsv1.StatefulSet, *appsv1ac.StatefulSetApplyConfiguration] = statefulSetAdapter{}

func (statefulSetAdapter) kind() string { return "StatefulSet" }

func (statefulSetAdapter) cached(r *reader, namespace, name string) (*appsv1.StatefulSet, error) {
	return r.statefulSet(namespace, name)
}

func (a statefulSetAdapter) live(ctx context.Context, namespace, name string) (*appsv1.StatefulSet, error) {
	return a.client.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// stripped reports whether cached is the informer cache's copy, stripped
// of most of its spec (builder.StripTemplates).
func (statefulSetAdapter) stripped(cached *appsv1.StatefulSet) bool {
	return builder.TemplateStripped(cached)
}

var _ fullReader[*appsv1.StatefulSet, *appsv1ac.StatefulSetApplyConfiguration] = statefulSetAdapter{}

// metadataOf is desired's metadata alone.
func (statefulSetAdapter) metadataOf(desired *appsv1ac.StatefulSetApplyConfiguration) any {
	return &appsv1ac.StatefulSetApplyConfiguration{TypeMetaApplyConfiguration: desired.TypeMetaApplyConfiguration,
		ObjectMetaApplyConfiguration: desired.ObjectMetaApplyConfiguration}
}

// specOf is desired without its metadata.
func (statefulSetAdapter) specOf(desired *appsv1ac.StatefulSetApplyConfiguration) any {
	d := *desired
	d.ObjectMetaApplyConfiguration = nil
	return &d
}

// withWrittenGeneration is desired with drift.WrittenGenerationAnnotation
// set to generation; desired itself is not changed.
func (statefulSetAdapter) withWrittenGeneration(desired *appsv1ac.StatefulSetApplyConfiguration, generation string) *appsv1ac.StatefulSetApplyConfiguration {
	d := *desired
	meta := metav1ac.ObjectMetaApplyConfiguration{}
	if desired.ObjectMetaApplyConfiguration != nil {
		meta = *desired.ObjectMetaApplyConfiguration
	}
	meta.Annotations = maps.Clone(meta.Annotations)
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[drift.WrittenGenerationAnnotation] = generation
	d.ObjectMetaApplyConfiguration = &meta
	return &d
}

// create makes the StatefulSet, with the generation every new object has
// as the one written (drift.WrittenGenerationAnnotation).
func (a statefulSetAdapter) create(ctx context.Context, desired *appsv1ac.StatefulSetApplyConfiguration) (*appsv1.StatefulSet, error) {
	obj := &appsv1.StatefulSet{}
	if err := builder.Convert(a.withWrittenGeneration(desired, "1"), obj); err != nil {
		return nil, err
	}
	return a.client.AppsV1().StatefulSets(*desired.Namespace).Create(ctx, obj, createOptions)
}

func (a statefulSetAdapter) repair(ctx context.Context, desired *appsv1ac.StatefulSetApplyConfiguration) (*appsv1.StatefulSet, error) {
	statefulSets := a.client.AppsV1().StatefulSets(*desired.Namespace)
	return applyOwningAll(ctx,
		func() (*appsv1.StatefulSet, error) { return statefulSets.Apply(ctx, desired, repairOptions) },
		func(patch []byte) error {
			_, err := statefulSets.Patch(ctx, *desired.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
			return err
		})
}

// budgetAdapter reads and writes PodDisruptionBudgets.
type budgetAdapter struct {
	client kubernetes.Interface
}

var _ childAdapter[*policyv1.PodDisruptionBudget, *policyv1ac.PodDisruptionBudgetApplyConfiguration] = budgetAdapter{}

func (budgetAdapter) kind() string { return "PodDisruptionBudget" }

func (budgetAdapter) cached(r *reader, namespace, name string) (*policyv1.PodDisruptionBudget, error) {
	return r.budget(namespace, name)
}

func (a budgetAdapter) live(ctx context.Context, namespace, name string) (*policyv1.PodDisruptionBudget, error) {
	return a.client.PolicyV1().PodDisruptionBudgets(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (a budgetAdapter) create(ctx context.Context, desired *policyv1ac.PodDisruptionBudgetApplyConfiguration) (*policyv1.PodDisruptionBudget, error) {
	obj := &policyv1.PodDisruptionBudget{}
	if err := builder.Convert(desired, obj); err != nil {
		return nil, err
	}
	return a.client.PolicyV1().PodDisruptionBudgets(*desired.Namespace).Create(ctx, obj, createOptions)
}

func (a budgetAdapter) repair(ctx context.Context, desired *policyv1ac.PodDisruptionBudgetApplyConfiguration) (*policyv1.PodDisruptionBudget, error) {
	budgets := a.client.PolicyV1().PodDisruptionBudgets(*desired.Namespace)
	return applyOwningAll(ctx,
		func() (*policyv1.PodDisruptionBudget, error) { return budgets.Apply(ctx, desired, repairOptions) },
		func(patch []byte) error {
			_, err := budgets.Patch(ctx, *desired.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
			return err
		})
}

// applyOwningAll applies, and makes sure the apply owns every field the
// controller set. A child is created with a POST, which records the
// controller's fields under an Update entry of its field manager; an apply
// removes only the fields its own Apply entry owned and no longer sets,
// so a field the plan stops setting (a restore's volume, spec.resources
// removed) would stay for ever. The first repair therefore hands the
// Update entry's fields to the Apply entry (as kubectl does when it moves
// to server-side apply) and applies again; later repairs are one apply.
//
// The hand-over patch is made on the resourceVersion the apply returned,
// and fails when someone wrote the object in between: a disruption
// budget's status changes with every pod's readiness. It is then made
// again from a new apply, ownAllAttempts times at most; after that the
// apply stands (what the plan sets is in place) and the hand-over waits
// for the next repair, rather than fail the pass and hold the steps after
// it.
func applyOwningAll[T runtime.Object](ctx context.Context, apply func() (T, error), patch func([]byte) error) (T, error) {
	logger := klog.FromContext(ctx)
	for attempt := 1; ; attempt++ {
		obj, err := apply()
		if err != nil {
			return obj, err
		}
		upgrade, err := csaupgrade.UpgradeManagedFieldsPatch(obj, sets.New(FieldManager), FieldManager)
		if err != nil || upgrade == nil {
			return obj, err
		}
		logger.V(2).Info("Moving the fields set at creation to the apply's field manager", "attempt", attempt)
		err = patch(upgrade)
		switch {
		case apierrors.IsConflict(err) && attempt < ownAllAttempts:
			continue
		case apierrors.IsConflict(err):
			logger.V(2).Info("The object kept changing; the move waits for the next repair")
			return obj, nil
		case err != nil:
			return obj, err
		}
		return apply()
	}
}

// ownAllAttempts bounds the hand-over patches of one repair (applyOwningAll).
const ownAllAttempts = 3

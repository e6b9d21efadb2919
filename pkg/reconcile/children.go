package reconcile

import (
	"context"
	"fmt"
	"reflect"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/klog/v2"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/drift"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/plan"
)

// ensureServices brings the headless and the client Service to the plan,
// and the read-only Service of a replicated Database. It returns what it
// created.
func (p *pass) ensureServices(ctx context.Context) ([]string, error) {
	services := []*corev1ac.ServiceApplyConfiguration{p.plan.HeadlessService, p.plan.Service}
	if p.plan.ReadOnlyService != nil {
		services = append(services, p.plan.ReadOnlyService)
	}
	var created []string
	for _, desired := range services {
		_, made, err := ensureChild(ctx, p, p.r.services, desired, *desired.Name)
		created = append(created, made...)
		if err != nil {
			return created, err
		}
	}
	return created, nil
}

// ensureStatefulSet brings the StatefulSet to pl, and returns it as it now
// is, and what it created.
func (p *pass) ensureStatefulSet(ctx context.Context, pl *plan.Plan) (*appsv1.StatefulSet, []string, error) {
	return ensureChild(ctx, p, p.r.statefulSets, pl.StatefulSet, *pl.StatefulSet.Name)
}

// ensureChild makes one child match desired and returns it as it now is,
// and, when it created it, "Kind name". A child that is missing is
// created; one that drifted in a field the controller owns is repaired
// with server-side apply, which leaves fields that others set alone; one
// that another owner controls is reported as a conflict and left untouched.
func ensureChild[T metav1.Object, AC any](ctx context.Context, p *pass, a childAdapter[T, AC], desired AC, name string) (T, []string, error) {
	var zero T
	r, db := p.r, p.db
	kind := a.kind()
	key := ChildKey{Kind: kind, Namespace: db.Namespace, Name: name}

	r.expectations.Look(key)
	existing, err := a.cached(p.read, db.Namespace, name)
	switch {
	case err == nil:
		r.expectations.Observed(key)
	case !apierrors.IsNotFound(err):
		return zero, nil, err
	case r.expectations.Pending(key):
		return zero, nil, &WaitingError{Kind: kind, Name: name}
	default:
		var created bool
		if existing, created, err = createOrLook(ctx, p, a, key, desired); err != nil {
			return existing, nil, err
		}
		if created {
			r.noteCovered(key, existing, desired)
			return existing, []string{kind + " " + name}, nil
		}
	}

	if err := r.controlledBy(key, existing, db); err != nil {
		return zero, nil, err
	}
	seen, comparable := coveredBy(existing, desired)
	if c, ok := r.covered.Get(key.sum()); ok && comparable && c == seen {
		return existing, nil, nil
	}
	compared, against := existing, any(desired)
	full, isFull := any(a).(fullReader[T, AC])
	unchangedSpec := false
	switch {
	case !isFull || !full.stripped(existing):
	case writtenUnchanged(existing, desired):
		// Its spec is as this controller wrote it for this same desired
		// state: only the metadata, which the cache keeps whole, can differ.
		against, unchangedSpec = full.metadataOf(desired), true
	default:
		// The cache's copy lacks fields the comparison reads: the API
		// server's has them.
		if compared, err = a.live(ctx, db.Namespace, name); err != nil {
			return zero, nil, fmt.Errorf("reading %s %s to compare it with the Database spec: %w", kind, name, err)
		}
		if err := r.controlledBy(key, compared, db); err != nil {
			return zero, nil, err
		}
		seen, comparable = coveredBy(compared, desired)
	}
	field, err := drift.FirstDifference(compared, against)
	if err != nil || field == "" {
		if err == nil && comparable {
			r.covered.Put(key.sum(), seen)
		}
		return existing, nil, err
	}
	klog.FromContext(ctx).V(2).Info("Repairing drift", "kind", kind, "name", name, "field", field)
	repaired := desired
	switch {
	case unchangedSpec:
		repaired = full.withWrittenGeneration(desired, strconv.FormatInt(compared.GetGeneration(), 10))
	case isFull:
		repaired = full.withWrittenGeneration(desired, writtenByRepair(compared, desired, full.specOf(desired)))
	}
	updated, err := a.repair(ctx, repaired)
	if err != nil {
		return zero, nil, fmt.Errorf("applying %s %s: %w", kind, name, err)
	}
	r.noteCovered(key, updated, desired)
	r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated, "Updated %s %s to match the Database spec", kind, name)
	return updated, nil, nil
}

// controlledBy returns nil when db controls obj, the child key names, and
// otherwise the conflict, remembered so that the next look reads the name
// before it creates.
func (r *Reconciler) controlledBy(key ChildKey, obj metav1.Object, db *dbv1alpha1.Database) error {
	if !metav1.IsControlledBy(obj, db) {
		r.conflicts.Put(key, struct{}{})
		return conflict(db, key.Kind, key.Name)
	}
	r.conflicts.Remove(key)
	return nil
}

// fullReader is a childAdapter whose kind the informer cache keeps
// stripped of fields the drift comparison reads (most of the StatefulSet's
// spec, builder.StripTemplates): stripped says whether a cached copy
// is, and ensureChild then compares the API server's copy (live), unless
// the copy's spec is as this controller wrote it for the same desired
// state (writtenUnchanged), when it compares desired's metadata alone
// (metadataOf). Its writes say which generation of the spec they wrote
// (withWrittenGeneration, drift.WrittenGenerationAnnotation); specOf is
// desired without its metadata, to tell whether a repair changes the spec.
type fullReader[T metav1.Object, AC any] interface {
	stripped(cached T) bool
	metadataOf(desired AC) any
	specOf(desired AC) any
	withWrittenGeneration(desired AC, generation string) AC
}

// writtenByRepair is the generation of compared's spec that a repair to
// desired leaves it at, for drift.WrittenGenerationAnnotation: compared's,
// when only its metadata differs and what was applied last is what is
// desired (the same digest: server-side apply removes no field); "" when
// the apply changes the spec, or may (it removes the fields an earlier
// desired state set), to a generation not known before its answer. Never
// one above compared's: an annotation that a later generation could
// reach would say a spec that someone else changed was this controller's.
func writtenByRepair(compared metav1.Object, desired, desiredSpec any) string {
	if !appliedFor(compared, desired) {
		return ""
	}
	if field, err := drift.FirstDifference(compared, desiredSpec); err != nil || field != "" {
		return ""
	}
	return strconv.FormatInt(compared.GetGeneration(), 10)
}

// writtenUnchanged reports whether existing's spec is the one this
// controller wrote for desired: its generation is still the one written
// (drift.WrittenGenerationAnnotation), and the digest of what was written
// (drift.AppliedAnnotation) is desired's.
func writtenUnchanged(existing metav1.Object, desired any) bool {
	written := existing.GetAnnotations()[drift.WrittenGenerationAnnotation]
	return written != "" && written == strconv.FormatInt(existing.GetGeneration(), 10) && appliedFor(existing, desired)
}

// appliedFor reports whether what was last applied to obj is desired: its
// digest (drift.AppliedAnnotation) is the one stamped on desired.
func appliedFor(obj metav1.Object, desired any) bool {
	digest := stampedDigest(desired)
	return digest != "" && obj.GetAnnotations()[drift.AppliedAnnotation] == digest
}

// noteCovered remembers obj, as a write just returned it, as covering
// desired when it does: the cache's copy at the same generation then needs
// no comparison, and a StatefulSet no read from the API server, on the
// next pass.
func (r *Reconciler) noteCovered(key ChildKey, obj metav1.Object, desired any) {
	seen, comparable := coveredBy(obj, desired)
	if !comparable {
		return
	}
	if field, err := drift.FirstDifference(obj, desired); err == nil && field == "" {
		r.covered.Put(key.sum(), seen)
	}
}

// coveredChild is a child found to hold every field of its desired state:
// a hash of the content of it found (contentVersion), and of the digest
// plan stamped on what was desired (drift.AppliedAnnotation), which stands
// for all of it. The same content compared with the same desired state is
// found the same: drift's comparison reads nothing else. The hash has the
// child's UID in it, so that another child whose key had the same hash
// (ChildKey.sum) would still not find it covered.
type coveredChild uint64

// sum is the hash of k that the children found covered are held by.
func (k ChildKey) sum() uint64 { return hashStrings(k.Kind, k.Namespace, k.Name) }

// coveredBy is what a pass that finds existing holding every field of
// desired remembers; comparable is false when either has nothing to
// remember it by (no resourceVersion, no digest).
func coveredBy(existing metav1.Object, desired any) (coveredChild, bool) {
	version, digest := contentVersion(existing), stampedDigest(desired)
	return coveredChild(hashStrings(string(existing.GetUID()), version, digest)), version != "" && digest != ""
}

// contentVersion names what of existing the drift comparison reads, so
// that a version of it with the same name needs no comparison again:
// desired sets metadata and spec, never status. For a StatefulSet or a
// PodDisruptionBudget that is the generation, which the API server raises
// with every change of the spec and never with one of the status, with the
// metadata desired can set (labels, annotations, owners, finalizers, the
// deletion), hashed here: the status of such a child changes with every
// pod's progress, each a new resourceVersion, and the StatefulSet is the
// largest child to compare. For the other kinds it is the resourceVersion.
// "" when existing has none: it was never read from an API server.
func contentVersion(existing metav1.Object) string {
	rv := existing.GetResourceVersion()
	switch existing.(type) {
	case *appsv1.StatefulSet, *policyv1.PodDisruptionBudget:
		if rv == "" {
			return ""
		}
		return "g" + strconv.FormatInt(existing.GetGeneration(), 10) + "/" + strconv.FormatUint(metadataHash(existing), 16)
	}
	return rv
}

// metadataHash hashes the metadata of o that desired states can set and
// that changes without a new generation. Maps are hashed entry by entry
// and summed, in no order; lists in order.
func metadataHash(o metav1.Object) uint64 {
	h := hashStrings("labels")
	for k, v := range o.GetLabels() {
		h += mix(hashStrings(k, v))
	}
	h = mix(h) + mix(hashStrings("annotations"))
	for k, v := range o.GetAnnotations() {
		h += mix(hashStrings(k, v))
	}
	parts := []string{"owners"}
	for _, ref := range o.GetOwnerReferences() {
		parts = append(parts, ref.APIVersion, ref.Kind, ref.Name, string(ref.UID), boolPtr(ref.Controller), boolPtr(ref.BlockOwnerDeletion))
	}
	parts = append(parts, "finalizers")
	parts = append(parts, o.GetFinalizers()...)
	parts = append(parts, "deleting", strconv.FormatBool(o.GetDeletionTimestamp() != nil))
	return mix(h) ^ hashStrings(parts...)
}

// mix is splitmix64's finalizer: hashes summed are mixed first, so that
// equal sums of different entries are as unlikely as collisions of one.
func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

func boolPtr(b *bool) string {
	switch {
	case b == nil:
		return "nil"
	case *b:
		return "true"
	}
	return "false"
}

// stampedDigest is the digest plan stamped on an apply configuration,
// desired, in its annotation drift.AppliedAnnotation; "" when it has none.
// Apply configurations keep their metadata in an embedded
// ObjectMetaApplyConfiguration, and have no method that returns it.
func stampedDigest(desired any) string {
	v := reflect.ValueOf(desired)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return ""
	}
	f := v.Elem().FieldByName("ObjectMetaApplyConfiguration")
	if !f.IsValid() {
		return ""
	}
	m, ok := f.Interface().(*metav1ac.ObjectMetaApplyConfiguration)
	if !ok || m == nil {
		return ""
	}
	return m.Annotations[drift.AppliedAnnotation]
}

// createOrLook handles a child missing from the cache. It creates it, and
// returns it with created true. When the name is taken, it returns the
// object that took it, read once: someone else's, or ours with its labels
// removed, which the filtered cache cannot see. A name already known to be
// taken is read first, so that a conflict costs one read per look, not a
// failed create and a read.
func createOrLook[T metav1.Object, AC any](ctx context.Context, p *pass, a childAdapter[T, AC], key ChildKey, desired AC) (T, bool, error) {
	r := p.r
	if _, known := r.conflicts.Get(key); known {
		existing, err := a.live(ctx, key.Namespace, key.Name)
		if err == nil || !apierrors.IsNotFound(err) {
			return existing, false, err
		}
		r.conflicts.Remove(key) // it went away: create it now
	}
	created, err := a.create(ctx, desired)
	if err == nil {
		r.expectations.Created(key, created.GetResourceVersion())
		return created, true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		var zero T
		return zero, false, fmt.Errorf("creating %s %s: %w", key.Kind, key.Name, err)
	}
	existing, err := a.live(ctx, key.Namespace, key.Name)
	return existing, false, err
}

// ensureDisruptionBudgets brings a replicated Database's
// PodDisruptionBudgets to the plan, and deletes those of a Database that
// no longer needs them (one replica or none): a budget over the primary
// of a single server would hold every drain. It returns what it created.
func (p *pass) ensureDisruptionBudgets(ctx context.Context) ([]string, error) {
	var created []string
	for _, desired := range p.plan.DisruptionBudgets {
		_, made, err := ensureChild(ctx, p, p.r.budgets, desired, *desired.Name)
		created = append(created, made...)
		if err != nil {
			return created, err
		}
	}
	if len(p.plan.DisruptionBudgets) > 0 {
		return created, nil
	}
	for _, name := range []string{names.DisruptionBudgetName(p.db), names.PrimaryDisruptionBudgetName(p.db)} {
		budget, err := p.read.budget(p.db.Namespace, name)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return created, err
		case !metav1.IsControlledBy(budget, p.db):
			continue
		}
		uid := budget.UID
		err = p.r.kube.PolicyV1().PodDisruptionBudgets(p.db.Namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return created, fmt.Errorf("deleting PodDisruptionBudget %s: %w", name, err)
		}
		klog.FromContext(ctx).V(2).Info("Deleted the PodDisruptionBudget of a Database that is no longer replicated", "budget", klog.KObj(budget))
	}
	return created, nil
}

package cached_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/cached"
)

// readsAs checks that c, and a deep copy of it, read whole as want.
func readsAs(t *testing.T, c cached.Compact, want runtime.Object) {
	t.Helper()
	if got := cached.Whole(c); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("cached object reads\n%+v\nwant\n%+v", got, want)
	}
	if got := cached.Whole(c.DeepCopyObject()); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("a deep copy reads\n%+v\nwant\n%+v", got, want)
	}
}

// The cache's compact StatefulSet reads whole as the StatefulSet
// builder.StripTemplates leaves, for every StatefulSet of the builder's
// golden files (each engine, replicated, restoring), marked stripped.
func TestStatefulSetReadsAsStripped(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "builder", "testdata", "statefulset-*.golden.yaml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("golden StatefulSets: %v, %v", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var sts appsv1.StatefulSet
			if err := yaml.Unmarshal(b, &sts); err != nil {
				t.Fatal(err)
			}
			sts.UID, sts.ResourceVersion, sts.Status = "uid", "42", appsv1.StatefulSetStatus{Replicas: 1, ReadyReplicas: 1, CurrentRevision: "r1"}
			builder.StripTemplates(&sts)
			want := sts.DeepCopy()
			c := cached.NewStatefulSet(&sts)
			readsAs(t, c, want)
			if !builder.TemplateStripped(c.StatefulSet()) {
				t.Error("the cached StatefulSet does not read as stripped: the drift check would compare its empty template")
			}
		})
	}
}

// stripped is a pod as stripForCache leaves it: its metadata, node and
// what it keeps of the status.
func stripped() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orders-0", Namespace: "shop", UID: "uid", ResourceVersion: "7", Labels: map[string]string{"app": "orders"},
			Annotations: map[string]string{"a": "b"}, OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "orders"}},
			DeletionTimestamp: &metav1.Time{}},
		Spec: corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.5", PodIPs: []corev1.PodIP{{IP: "10.0.0.5"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available",
					LastTransitionTime: metav1.Unix(1700000000, 0)}},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "install-tools", Image: "tools:1"}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "postgresql", Image: "postgres:17", Ready: true, RestartCount: 2,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
}

// The cache's compact pod reads whole as the stripped pod it was made of.
func TestPodReadsAsStripped(t *testing.T) {
	readsAs(t, cached.NewPod(stripped()), stripped())
}

// The cache's compact Service reads whole as the stripped Service it was
// made of.
func TestServiceReadsAsStripped(t *testing.T) {
	svc := func() *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop", UID: "uid", ResourceVersion: "7",
			Labels: map[string]string{"app": "orders"}, Annotations: map[string]string{"a": "b"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None", Selector: map[string]string{"app": "orders"},
				Ports: []corev1.ServicePort{{Name: "postgresql", Port: 5432}}, PublishNotReadyAddresses: true}}
	}
	readsAs(t, cached.NewService(svc()), svc())
}

// strippedClaim is a claim as stripForCache leaves it: what names it, its
// volume, the size asked and its phase.
func strippedClaim() *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-orders-0", Namespace: "shop", UID: "uid", ResourceVersion: "7",
		Labels: map[string]string{"app": "orders"}, CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC))},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1",
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
}

// The cache's compact claim reads whole as the stripped claim it was made
// of.
func TestPersistentVolumeClaimReadsAsStripped(t *testing.T) {
	readsAs(t, cached.NewPersistentVolumeClaim(strippedClaim()), strippedClaim())
}

// PersistentVolumeClaimLister reads a cache of compact claims as
// client-go's typed lister reads a cache of claims.
func TestPersistentVolumeClaimLister(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	other := strippedClaim()
	other.Namespace, other.Labels = "billing", map[string]string{"app": "billing"}
	for _, c := range []*corev1.PersistentVolumeClaim{strippedClaim(), other} {
		if err := indexer.Add(cached.NewPersistentVolumeClaim(c)); err != nil {
			t.Fatal(err)
		}
	}
	lister := cached.PersistentVolumeClaimLister(indexer)
	got, err := lister.PersistentVolumeClaims("shop").Get("data-orders-0")
	if err != nil || !equality.Semantic.DeepEqual(got, strippedClaim()) {
		t.Errorf("Get: %+v, %v", got, err)
	}
	if _, err := lister.PersistentVolumeClaims("shop").Get("data-orders-1"); !apierrors.IsNotFound(err) {
		t.Errorf("Get of a claim the cache does not hold: %v, want not found", err)
	}
	if claims, err := lister.PersistentVolumeClaims("shop").List(labels.Everything()); err != nil || len(claims) != 1 || claims[0].Namespace != "shop" {
		t.Errorf("List of one namespace: %v, %v", claims, err)
	}
	if claims, err := lister.List(labels.SelectorFromSet(labels.Set{"app": "billing"})); err != nil || len(claims) != 1 || claims[0].Namespace != "billing" {
		t.Errorf("List by labels: %v, %v", claims, err)
	}
}

// PodLister reads a cache of compact pods as client-go's typed lister
// reads a cache of pods.
func TestPodLister(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	other := stripped()
	other.Namespace, other.Labels = "billing", map[string]string{"app": "billing"}
	for _, p := range []*corev1.Pod{stripped(), other} {
		if err := indexer.Add(cached.NewPod(p)); err != nil {
			t.Fatal(err)
		}
	}
	lister := cached.PodLister(indexer)
	got, err := lister.Pods("shop").Get("orders-0")
	if err != nil || !equality.Semantic.DeepEqual(got, stripped()) {
		t.Errorf("Get: %+v, %v", got, err)
	}
	if _, err := lister.Pods("shop").Get("orders-1"); err == nil {
		t.Error("Get of a pod the cache does not hold found one")
	}
	if pods, err := lister.Pods("shop").List(labels.Everything()); err != nil || len(pods) != 1 || pods[0].Namespace != "shop" {
		t.Errorf("List of one namespace: %v, %v", pods, err)
	}
	if pods, err := lister.List(labels.SelectorFromSet(labels.Set{"app": "billing"})); err != nil || len(pods) != 1 || pods[0].Namespace != "billing" {
		t.Errorf("List by labels: %v, %v", pods, err)
	}
}

// The cache's compact Secret reads whole as the Secret, with no data, it
// was made of: a TLS Secret's ten annotations too.
func TestSecretReadsAsStripped(t *testing.T) {
	secret := func() *corev1.Secret {
		annotations := map[string]string{}
		for _, k := range []string{builder.AnnotationTLSMode, builder.AnnotationTLSNames, builder.AnnotationSerial, builder.AnnotationIssuer,
			builder.AnnotationBundle, builder.AnnotationTrusts, builder.AnnotationTrustedSince, builder.AnnotationNotAfter,
			builder.AnnotationAuthorityNA, builder.AnnotationRenewAt} {
			annotations[k] = "value of " + k
		}
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-tls", Namespace: "shop", UID: "uid", ResourceVersion: "7",
			Labels: map[string]string{"app": "orders"}, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{Kind: "Database", Name: "orders", Controller: ptr.To(true)}}},
			Type: corev1.SecretTypeTLS, Immutable: ptr.To(false)}
	}
	readsAs(t, cached.NewSecret(secret()), secret())
}

// A compact form's metadata reads as its object's, to the handlers and
// indexes that read any object's (meta.Accessor): every field it holds,
// its annotations too, which it holds apart from the map it was made
// with; written through it, they read back. The fields it does not hold
// (no reader reads them) read as empty.
func TestCompactMetadataReadsAsTheObjects(t *testing.T) {
	annotations := map[string]string{"dbcontroller.io/applied-digest": "d1", "a": "b"}
	deleted := metav1.NewTime(time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC))
	meta := metav1.ObjectMeta{Name: "orders", Namespace: "shop", UID: "uid", ResourceVersion: "7", Generation: 3,
		CreationTimestamp: metav1.NewTime(deleted.Add(-time.Hour)), DeletionTimestamp: &deleted,
		Labels: map[string]string{"app": "orders"}, Annotations: annotations, Finalizers: []string{"dbcontroller.io/database"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Database", Name: "orders", UID: "db-uid", Controller: ptr.To(true)}},
		GenerateName:    "orders-", DeletionGracePeriodSeconds: ptr.To[int64](30), SelfLink: "/api/v1/x"}
	held := meta.DeepCopy()
	held.GenerateName, held.DeletionGracePeriodSeconds, held.SelfLink = "", nil, ""
	for _, c := range []cached.Compact{
		cached.NewPod(&corev1.Pod{ObjectMeta: *meta.DeepCopy()}),
		cached.NewService(&corev1.Service{ObjectMeta: *meta.DeepCopy()}),
		cached.NewStatefulSet(&appsv1.StatefulSet{ObjectMeta: *meta.DeepCopy()}),
		cached.NewSecret(&corev1.Secret{ObjectMeta: *meta.DeepCopy()}),
		cached.NewPersistentVolumeClaim(&corev1.PersistentVolumeClaim{ObjectMeta: *meta.DeepCopy()}),
	} {
		t.Run(fmt.Sprintf("%T", c), func(t *testing.T) {
			o, err := apimeta.Accessor(c)
			if err != nil {
				t.Fatal(err)
			}
			read := metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), UID: o.GetUID(), ResourceVersion: o.GetResourceVersion(),
				Generation: o.GetGeneration(), CreationTimestamp: o.GetCreationTimestamp(), DeletionTimestamp: o.GetDeletionTimestamp(),
				Labels: o.GetLabels(), Annotations: o.GetAnnotations(), Finalizers: o.GetFinalizers(), OwnerReferences: o.GetOwnerReferences(),
				GenerateName: o.GetGenerateName(), DeletionGracePeriodSeconds: o.GetDeletionGracePeriodSeconds(), SelfLink: o.GetSelfLink(),
				ManagedFields: o.GetManagedFields()}
			if !equality.Semantic.DeepEqual(read, *held) {
				t.Errorf("reads as %+v, want %+v", read, *held)
			}
			if got := reflect.ValueOf(c.Object()).Elem().FieldByName("ObjectMeta").Interface().(metav1.ObjectMeta); !equality.Semantic.DeepEqual(got, *held) {
				t.Errorf("the whole object's metadata is %+v, want %+v", got, *held)
			}
			o.SetAnnotations(map[string]string{"c": "d"})
			if got := o.GetAnnotations(); !maps.Equal(got, map[string]string{"c": "d"}) {
				t.Errorf("annotations set read back as %v", got)
			}
			o.SetAnnotations(nil)
			if got := o.GetAnnotations(); got != nil {
				t.Errorf("no annotations read back as %v, want nil", got)
			}
			if o.GetName() != "orders" {
				t.Errorf("setting the annotations changed the name to %q", o.GetName())
			}
		})
	}
}

// An update is unchanged when the compact forms differ only in their
// resourceVersion, for the kinds whose compact form holds all their
// readers read; never for a Secret, whose data the readers read from the
// API server, nor for what is not a compact form.
func TestUnchanged(t *testing.T) {
	pod := func(version string, ready corev1.ConditionStatus) *cached.Pod {
		return cached.NewPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: version, Labels: map[string]string{"a": "b"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}})
	}
	claim := func(version string, phase corev1.PersistentVolumeClaimPhase) *cached.PersistentVolumeClaim {
		return cached.NewPersistentVolumeClaim(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: version},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase}})
	}
	sts := func(version string, generation int64, ready int32) *cached.StatefulSet {
		return cached.NewStatefulSet(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s", ResourceVersion: version, Generation: generation},
			Status: appsv1.StatefulSetStatus{ReadyReplicas: ready}})
	}
	service := func(version string, port int32) *cached.Service {
		return cached.NewService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", ResourceVersion: version},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: port}}}})
	}
	secret := func(version string) *cached.Secret {
		return cached.NewSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", ResourceVersion: version}})
	}
	for _, tt := range []struct {
		name     string
		old, new any
		want     bool
	}{
		{"a pod at a new version only", pod("1", corev1.ConditionFalse), pod("2", corev1.ConditionFalse), true},
		{"a pod now ready", pod("1", corev1.ConditionFalse), pod("2", corev1.ConditionTrue), false},
		{"a claim at a new version only", claim("1", corev1.ClaimPending), claim("2", corev1.ClaimPending), true},
		{"a claim bound", claim("1", corev1.ClaimPending), claim("2", corev1.ClaimBound), false},
		{"a StatefulSet at a new version only", sts("1", 1, 0), sts("2", 1, 0), true},
		{"a StatefulSet's spec changed", sts("1", 1, 0), sts("2", 2, 0), false},
		{"a StatefulSet's replica ready", sts("1", 1, 0), sts("2", 1, 1), false},
		{"a Service at a new version only", service("1", 5432), service("2", 5432), true},
		{"a Service's port changed", service("1", 5432), service("2", 5433), false},
		{"a Secret at a new version: its data may have changed", secret("1"), secret("2"), false},
		{"not compact", &corev1.Pod{}, &corev1.Pod{}, false},
		{"another kind", pod("1", corev1.ConditionFalse), claim("2", corev1.ClaimPending), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := cached.Unchanged(tt.old, tt.new); got != tt.want {
				t.Errorf("Unchanged() = %v, want %v", got, tt.want)
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
)

// writes records the writes a client makes, as "verb Kind/name".
type writes struct {
	mu   sync.Mutex
	list []string
}

func (w *writes) add(verb string, c client.Client, obj client.Object) {
	gvk, _ := c.GroupVersionKindFor(obj)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, fmt.Sprintf("%s %s/%s", verb, gvk.Kind, obj.GetName()))
}

func (w *writes) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

func (w *writes) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.add("create", c, obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.add("update", c, obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			w.add("patch", c, obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.add("delete", c, obj)
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			w.add("update "+sub, c, obj)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			w.add("patch "+sub, c, obj)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

// newDatabase is a Database as the benchmark makes it (hack/bench's
// newDatabase), with the defaults the CRD's schema would give it.
func newDatabase(t *testing.T) *dbv1alpha1.Database {
	e, err := registry.Lookup(string(dbv1alpha1.EnginePostgreSQL))
	if err != nil {
		t.Fatal(err)
	}
	versions := e.Versions()
	return &dbv1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: "db-00000", Namespace: "bench", UID: types.UID("uid-db-00000"), Generation: 1},
		Spec: dbv1alpha1.DatabaseSpec{
			Engine:  dbv1alpha1.EnginePostgreSQL,
			Version: versions[len(versions)-1],
			Storage: dbv1alpha1.StorageSpec{Size: resource.MustParse("1Gi")},
			TLS:     &dbv1alpha1.TLSSpec{},
		},
	}
}

func TestReconcile(t *testing.T) {
	ctx := context.Background()
	db := newDatabase(t)
	var w writes
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(db).
		WithStatusSubresource(&dbv1alpha1.Database{}).WithInterceptorFuncs(w.funcs()).Build()
	r := &DatabaseReconciler{Client: c, Scheme: scheme}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(db)}

	// A new Database: its finalizer, its children in the floor's order, a status.
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"update Database/db-00000",
		"create Secret/db-00000-ca",
		"create Secret/db-00000-tls",
		"create Secret/db-00000-credentials",
		"create Service/db-00000-headless",
		"create Service/db-00000",
		"create StatefulSet/db-00000",
		"update status Database/db-00000",
	}
	if got := w.take(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("writes of the first reconcile:\n got %q\nwant %q", got, want)
	}
	var got dbv1alpha1.Database
	if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Finalizers) != 1 || got.Finalizers[0] != dbv1alpha1.FinalizerDatabase {
		t.Errorf("finalizers: %v", got.Finalizers)
	}
	if got.Status.Phase != dbv1alpha1.PhaseProvisioning || got.Status.TLS == nil {
		t.Errorf("status: phase %q, tls %v", got.Status.Phase, got.Status.TLS)
	}
	secrets := map[string]*corev1.Secret{}
	for _, name := range []string{"db-00000-ca", "db-00000-tls", "db-00000-credentials"} {
		s := &corev1.Secret{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "bench", Name: name}, s); err != nil {
			t.Fatal(err)
		}
		if ref := metav1.GetControllerOf(s); ref == nil || ref.UID != db.UID {
			t.Errorf("Secret %s: controller %v", name, ref)
		}
		secrets[name] = s
	}
	ca := secrets["db-00000-ca"].Data[builder.AuthorityKey]
	if len(ca) == 0 || !bytes.Equal(secrets["db-00000-credentials"].Data[builder.AuthorityKey], ca) {
		t.Errorf("the credentials Secret's ca.crt is not the authority's")
	}
	var sts appsv1.StatefulSet
	if err := c.Get(ctx, req.NamespacedName, &sts); err != nil {
		t.Fatal(err)
	}

	// Nothing changed: no write at all.
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := w.take(); len(got) > 0 {
		t.Fatalf("writes of a reconcile with nothing changed: %q", got)
	}

	// The StatefulSet is ready: Running, in one status write; the
	// certificates and the password are kept.
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1,
		CurrentRevision: "r1", UpdateRevision: "r1"}
	if err := c.Status().Update(ctx, &sts); err != nil {
		t.Fatal(err)
	}
	w.take()
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got, want := w.take(), []string{"update status Database/db-00000"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("writes once ready:\n got %q\nwant %q", got, want)
	}
	if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != dbv1alpha1.PhaseRunning {
		t.Errorf("phase %q, want Running", got.Status.Phase)
	}
	for name, before := range secrets {
		s := &corev1.Secret{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "bench", Name: name}, s); err != nil {
			t.Fatal(err)
		}
		if s.ResourceVersion != before.ResourceVersion {
			t.Errorf("Secret %s was rewritten", name)
		}
	}
}

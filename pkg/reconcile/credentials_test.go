package reconcile

import (
	"encoding/json"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// convergedWithoutSecret seeds a Database that reached Running, and then
// lost its credentials Secret: the Secret is neither in the cache nor in
// the API.
func (f *fixture) convergedWithoutSecret(db *dbv1alpha1.Database) {
	_, _, _, secret := f.converged(db)
	f.secretLister = nil
	f.kubeobjects = slices.DeleteFunc(f.kubeobjects, func(o runtime.Object) bool { return o == secret })
}

func TestSecretIsNeverRewrittenOrRegenerated(t *testing.T) {
	t.Run("rotated password is kept", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		_, _, _, secret := f.converged(db)
		secret.Data = map[string][]byte{"password": []byte("rotated")}
		secret.Labels["team"] = "x"
		f.run(ctx, ref(db), synced)
	})
	t.Run("deleted Secret of an initialised database is not regenerated", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		f.convergedWithoutSecret(db)

		f.expectGet(secretsResource, "default", "orders-credentials")
		// Is the namespace being deleted? A dry run, of no password.
		f.kubeactions = append(f.kubeactions, actiontest.DryRunCreate(secretsResource,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-credentials", Namespace: "default"}}))
		msg := "Secret default/orders-credentials is gone but the database was initialised with its password; restore the Secret (keys username, password, database, host, port, uri), and the controller adopts it and continues. It will not generate a new password"
		st := wantStatus(db, "Failed", 1, 1, "16", "False", "CredentialsSecretMissing", msg, "False", "CredentialsSecretMissing", msg)
		keepTransitionTime(&st, "Progressing")
		f.expectStatusUpdate(db, st)
		f.events = []string{"Warning CredentialsSecretMissing " + msg}
		f.run(ctx, ref(db), needsPerson)
	})
	t.Run("its namespace being deleted took it: no problem, no event", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		f.convergedWithoutSecret(db)
		r, recorder := f.newReconciler()
		f.kubeclient.PrependReactor("create", "secrets", func(a core.Action) (bool, runtime.Object, error) {
			return true, nil, actiontest.NamespaceTerminating(a.GetResource().GroupResource(), "orders-credentials")
		})
		f.expectGet(secretsResource, "default", "orders-credentials")
		f.kubeactions = append(f.kubeactions, actiontest.DryRunCreate(secretsResource,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-credentials", Namespace: "default"}}))
		f.syncAndCheck(ctx, r, recorder, ref(db), namespaceDeleting)
	})
}

// A Secret of the credentials' name that no one controls, with every key,
// is adopted with its password: the one the retained data was made with.
func TestRetainedSecretIsAdopted(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	kept := expectedSecret(t, db, "the-old-password")
	kept.OwnerReferences = nil
	kept.ResourceVersion = "7"
	f.seed(db, kept)
	f.expectGet(secretsResource, "default", "orders-credentials")
	owner := metav1.NewControllerRef(db, dbv1alpha1.SchemeGroupVersion.WithKind("Database"))
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": "7", "labels": names.Labels(db), "ownerReferences": []metav1.OwnerReference{*owner}}})
	f.kubeactions = append(f.kubeactions, core.NewPatchAction(secretsResource, "default", "orders-credentials", types.MergePatchType, patch))
	f.expectCreate(servicesResource, expectedHeadless(t, db))
	f.expectCreate(servicesResource, expectedService(t, db))
	f.expectCreate(statefulSetsResource, expectedStatefulSet(t, db))
	f.expectStatusUpdate(db, actiontest.Provisioning(db))
	f.events = []string{
		"Normal Adopted Adopted Secret orders-credentials: it holds the credentials' keys and no one controlled it; its password is kept",
		"Normal Created Created Service orders-headless, Service orders, StatefulSet orders",
	}
	f.run(ctx, ref(db), synced)

	t.Run("without every key it is not adopted", func(t *testing.T) {
		f := newFixture(t)
		partial := kept.DeepCopy()
		delete(partial.Data, "uri")
		f.seed(db, partial)
		f.expectGet(secretsResource, "default", "orders-credentials")
		msg := "Secret default/orders-credentials is controlled by no one but lacks the keys uri, so it is not adopted: add them, or delete it if the database holds no data yet"
		f.expectStatusUpdate(db, wantStatus(db, "Failed", 0, 0, "", "False", "ResourceConflict", msg, "False", "ResourceConflict", msg))
		f.events = []string{"Warning ResourceConflict " + msg}
		f.run(ctx, ref(db), needsPersonRecheck)
	})
}

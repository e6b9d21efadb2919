package reconcile

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/login"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// newLoginFixture is a fixture whose Reconciler checks the credentials on
// servers, every 30 s, and tells changed.
func newLoginFixture(t *testing.T, changed func(types.NamespacedName)) (*fixture, *actiontest.Logins) {
	f := newFixture(t)
	servers := &actiontest.Logins{}
	f.logins = login.New(login.Config{Logins: map[string]login.Func{"postgresql": servers.Login}, Interval: 30 * time.Second, Clock: f.clock, Changed: changed})
	return f, servers
}

// secretChanged stores a copy of secret changed by edit, at
// resourceVersion 5, in the API server and the cache.
func (f *fixture) secretChanged(secret *corev1.Secret, edit func(*corev1.Secret)) {
	changed := secret.DeepCopy()
	edit(changed)
	changed.ResourceVersion = "5"
	if err := f.kubeclient.Tracker().Update(secretsResource, changed, "default"); err != nil {
		f.t.Fatal(err)
	}
	f.update(f.caches.Secrets, changed)
}

// A password changed in the database and not in the Secret: the servers
// serve, their pods stay ready, and the Database is Degraded with a cause
// that says so, one Warning, and no write while it lasts; it is Running
// again once the Secret holds the password the servers take.
func TestPasswordChangedInTheDatabaseAlone(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	var changed []types.NamespacedName
	f, servers := newLoginFixture(t, func(db types.NamespacedName) { changed = append(changed, db) })
	servers.SetPassword(podIP(0), "changed-by-sql")
	db := newDatabase("orders", "postgresql", "16", 1)
	db.ResourceVersion = "10"
	sts, headless, svc, secret := f.converged(db)
	running := db.Status
	for i, o := range []metav1.Object{sts, headless, svc, secret} {
		o.SetResourceVersion(fmt.Sprint(i + 1))
	}
	f.seed(replicatedPod(db, 0, "", true))
	r, recorder := f.newReconciler()

	// The first pass reads the Secret's credentials, once, and gives them
	// to the checker: nothing is known yet, so nothing is written.
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	if got := servers.Took(); len(got) != 0 {
		t.Fatalf("the pass logged in itself: %v", got)
	}
	f.kubeactions = nil
	f.syncAndCheck(ctx, r, recorder, ref(db), skipped)

	f.logins.CheckDue(ctx)
	if got, want := servers.Took(), []string{podIP(0) + " postgres/rotated-by-user@orders"}; !slices.Equal(got, want) {
		t.Fatalf("logins %v, want %v: the Secret's username, password and database", got, want)
	}
	if want := []types.NamespacedName{ref(db)}; !slices.Equal(changed, want) {
		t.Fatalf("the checker brought back %v, want %v", changed, want)
	}

	// The refusal comes back with the Database: a pass, though it settled.
	msg := `Secret orders-credentials: the server of pod orders-0 refused its username and password (password authentication failed for user "postgres"). ` +
		"Clients that log in with them are refused, and those that have the password the database holds are served. " +
		"If the password was changed in the database, write the new one to the Secret's keys password and uri: the controller logs in again as soon as the Secret changes, and every 30s"
	degraded := actiontest.WantStatus(db, dbv1alpha1.PhaseDegraded, 1, 1, "16", "False", "CredentialsRejected", msg,
		"False", "Converged", "the Database matches its spec")
	degraded.Conditions[1].LastTransitionTime = running.Conditions[1].LastTransitionTime
	f.expectStatusUpdate(db, degraded)
	f.events = []string{"Warning CredentialsRejected " + msg}
	f.syncAndCheck(ctx, r, recorder, ref(db), synced)

	// While it lasts: no write, no event, and a check per interval only.
	stored := db.DeepCopy()
	stored.Status = degraded
	stored.ResourceVersion = "11"
	f.update(f.databases, stored)
	f.actions, f.events = nil, nil
	f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	f.clock.SetTime(testNow.Add(29 * time.Second))
	f.logins.CheckDue(ctx)
	if got := servers.Took(); len(got) != 0 {
		t.Fatalf("logged in again within the interval: %v", got)
	}
	f.clock.SetTime(testNow.Add(30 * time.Second))
	f.logins.CheckDue(ctx)
	if got := servers.Took(); len(got) != 1 || len(changed) != 1 {
		t.Fatalf("after the interval: logins %v, brought back %v; want one login, no news", got, changed)
	}
	f.syncAndCheck(ctx, r, recorder, ref(db), skipped)

	// The user writes the new password to the Secret: read at once, and
	// logged in with at once.
	f.secretChanged(secret, func(s *corev1.Secret) { s.Data[engine.SecretKeyPassword] = []byte("changed-by-sql") })
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	f.kubeactions = nil
	f.logins.CheckDue(ctx)
	if got, want := servers.Took(), []string{podIP(0) + " postgres/changed-by-sql@orders"}; !slices.Equal(got, want) || len(changed) != 2 {
		t.Fatalf("after the Secret changed: logins %v, brought back %v; want %v and a second return", got, changed, want)
	}
	back := actiontest.WantStatus(db, dbv1alpha1.PhaseRunning, 1, 1, "16", "True", "AllReplicasReady", "1/1 replicas are ready",
		"False", "Converged", "the Database matches its spec")
	back.Conditions[0].LastTransitionTime = metav1.NewTime(testNow.Add(30 * time.Second))
	back.Conditions[1].LastTransitionTime = running.Conditions[1].LastTransitionTime
	f.expectStatusUpdate(db, back)
	f.events = []string{"Normal Running postgresql 16 is running: 1/1 replicas are ready"}
	f.syncAndCheck(ctx, r, recorder, ref(db), synced)
}

// A server the controller cannot reach says nothing of the credentials:
// the Database stays Running, with no write.
func TestUnreachableServersSayNothingOfTheCredentials(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f, servers := newLoginFixture(t, nil)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.converged(db)
	f.seed(replicatedPod(db, 0, "", true))
	r, recorder := f.newReconciler()
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	f.logins.CheckDue(ctx)
	if got := servers.Took(); len(got) != 1 {
		t.Fatalf("logins %v, want one", got)
	}
	f.kubeactions = nil
	f.syncAndCheck(ctx, r, recorder, ref(db), synced)
}

// A Database with no ready server has nothing to log in to: it is
// forgotten, and its pods' causes are its status.
func TestNoReadyServerIsNotLoggedInTo(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f, servers := newLoginFixture(t, nil)
	db := newDatabase("orders", "postgresql", "16", 1)
	db.Status = actiontest.Provisioning(db)
	f.seed(db, notReadyStatefulSet(t, db), expectedHeadless(t, db), expectedService(t, db), expectedSecret(t, db, "pw"), startingPod(db))
	r, recorder := f.newReconciler()
	f.syncAndCheck(ctx, r, recorder, ref(db), recheckDue)
	f.logins.CheckDue(ctx)
	if got := servers.Took(); len(got) != 0 {
		t.Fatalf("logged in to a Database with no ready server: %v", got)
	}
}

// The pass that makes a new Database's Secret keeps the credentials it
// wrote, as a read of the Secret would: the pass that finds the server
// ready logs in with them, and reads nothing from the API server first.
// (A read there waited for the client's rate limit behind the creates of
// every other new Database, and held that Database's Running back.)
func TestANewDatabasesServersAreAskedWithTheCredentialsItsPassMade(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f, servers := newLoginFixture(t, nil)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.seed(db)
	r, recorder := f.newReconciler()
	f.expectNewDatabase(db)
	f.syncAndCheck(ctx, r, recorder, ref(db), synced)

	// The informers show what it made, the Secret without its data as the
	// controller's cache keeps it, and the server ready.
	secret, err := f.kubeclient.CoreV1().Secrets("default").Get(ctx, "orders-credentials", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret.Data = nil
	f.add(f.caches.Secrets, secret)
	for _, name := range []string{"orders-headless", "orders"} {
		svc, err := f.kubeclient.CoreV1().Services("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f.add(f.caches.Services, svc)
	}
	sts, err := f.kubeclient.AppsV1().StatefulSets("default").Get(ctx, "orders", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.add(f.caches.StatefulSets, sts)
	f.add(f.caches.Pods, replicatedPod(db, 0, "", true))

	f.kubeactions, f.actions, f.events = nil, nil, nil
	f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	f.logins.CheckDue(ctx)
	if got, want := servers.Took(), []string{podIP(0) + " postgres/" + testPassword + "@orders"}; !slices.Equal(got, want) {
		t.Fatalf("logins %v, want %v: the password the pass generated", got, want)
	}
}

// A controller started over Databases whose servers are ready reads their
// credentials Secrets with one LIST before the first passes
// (ListCredentials), which then read none; a Secret that changed after the
// LIST is read again by its pass. Only the credentials Secrets of the
// Databases whose servers are logged in to are kept, not the other Secrets
// the selector finds, nor MongoDB's.
func TestARestartReadsTheCredentialsWithOneList(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f, servers := newLoginFixture(t, nil)
	orders := newDatabase("orders", "postgresql", "16", 1)
	billing := newDatabase("billing", "postgresql", "16", 1)
	sessions := newDatabase("sessions", "mongodb", "7.0", 1)
	var secrets []*corev1.Secret
	for _, db := range []*dbv1alpha1.Database{orders, billing, sessions} {
		_, _, _, secret := f.convergedAtVersions(db)
		secret.UID = types.UID(secret.Name + "-uid")
		secrets = append(secrets, secret)
		f.seed(replicatedPod(db, 0, "", true))
	}
	// A Secret of the Database that is not its credentials, and one of the
	// credentials' name that no Database controls.
	other := secrets[0].DeepCopy()
	other.Name, other.UID = "orders-other", "orders-other-uid"
	foreign := secrets[1].DeepCopy()
	foreign.Name, foreign.UID, foreign.OwnerReferences = "lost-credentials", "lost-credentials-uid", nil
	f.seed(other, foreign)
	r, recorder := f.newReconciler()

	// MongoDB's servers are not logged in to: its Database alone makes
	// no LIST, and its Secret is not kept.
	f.kubeclient.ClearActions()
	if kept, err := r.ListCredentials(ctx, "default", []*dbv1alpha1.Database{sessions}); err != nil || kept != 0 {
		t.Fatalf("ListCredentials of a MongoDB Database = %d, %v; want 0", kept, err)
	}
	actiontest.CheckAllActions(t, "kube clientset", nil, f.kubeclient.Actions())
	kept, err := r.ListCredentials(ctx, "default", []*dbv1alpha1.Database{orders, billing, sessions})
	if err != nil || kept != 2 {
		t.Fatalf("ListCredentials = %d, %v; want the 2 PostgreSQL Databases' credentials Secrets", kept, err)
	}
	actiontest.CheckAllActions(t, "kube clientset", []core.Action{actiontest.ListLabelled(secretsResource, "default", names.ManagedSelector())}, f.kubeclient.Actions())

	// orders' first pass reads nothing, and its servers are logged in to
	// with its Secret's password.
	f.syncAndCheck(ctx, r, recorder, ref(orders), synced)
	f.logins.CheckDue(ctx)
	if got, want := servers.Took(), []string{podIP(0) + " postgres/rotated-by-user@orders"}; !slices.Equal(got, want) {
		t.Fatalf("logins %v, want %v", got, want)
	}

	// billing's Secret changed after the LIST: its pass reads it.
	f.secretChanged(secrets[1], func(*corev1.Secret) {})
	f.expectGet(secretsResource, "default", "billing-credentials")
	f.syncAndCheck(ctx, r, recorder, ref(billing), synced)
	if n := r.listed.Len(); n != 0 {
		t.Fatalf("%d listed Secrets still kept after both passes took theirs, want 0", n)
	}
}

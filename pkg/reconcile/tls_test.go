package reconcile

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/certs"
	"github.com/dbcontroller/database-controller/pkg/ha"
)

// tlsDatabase is a PostgreSQL Database with spec.tls.mode.
func tlsDatabase(mode dbv1alpha1.TLSMode) *dbv1alpha1.Database {
	db := newDatabase("orders", "postgresql", "16", 1)
	db.Spec.TLS = &dbv1alpha1.TLSSpec{Mode: mode}
	return db
}

// issuedTLS is what an earlier pass wrote for db: its authority's Secret
// and its TLS Secret, for mode, issued at issuedAt; and the bundle.
func issuedTLS(t *testing.T, db *dbv1alpha1.Database, mode dbv1alpha1.TLSMode, issuedAt time.Time) (authority, server *corev1.Secret, bundle []byte) {
	t.Helper()
	ca := newAuthority(t, "test authority", issuedAt)
	bundle = certs.Bundle(issuedAt, ca.CertPEM)
	authority, server = tlsSecrets(t, db, mode, ca, ca, bundle, issuedAt, issuedAt)
	return authority, server, bundle
}

// newAuthority is a certificate authority named name, made at at.
func newAuthority(t *testing.T, name string, at time.Time) certs.Issued {
	t.Helper()
	ca, err := certs.NewAuthority(rand.Reader, name, at, certs.AuthorityValidity)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// tlsSecrets are db's authority's Secret, of ca, and its TLS Secret, for
// mode, with a certificate signer issued at issuedAt and bundle trusted
// since trustedSince, as a pass writes them.
func tlsSecrets(t *testing.T, db *dbv1alpha1.Database, mode dbv1alpha1.TLSMode, ca, signer certs.Issued, bundle []byte,
	issuedAt, trustedSince time.Time) (authority, server *corev1.Secret) {
	t.Helper()
	issued, err := certs.IssueServer(rand.Reader, signer, serverNames(db), issuedAt, certs.ServerValidity)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := certs.Parse(issued.CertPEM)
	signerCert, _ := certs.Parse(signer.CertPEM)
	caAuthority, _ := builder.AuthorityOf(ca)
	authority = actiontest.Object[corev1.Secret](t, builder.NewAuthoritySecret(db, caAuthority))
	server = actiontest.Object[corev1.Secret](t, builder.NewTLSSecret(db, actiontest.Engine(t, db), builder.ServerCertificate{
		CertPEM: issued.CertPEM, KeyPEM: issued.KeyPEM, BundlePEM: bundle,
		Mode: string(mode), Names: serverNamesDigest(db), Serial: cert.SerialNumber.Text(16), Issuer: signerCert.SerialNumber.Text(16),
		Bundle: pemDigest(bundle), Trusts: trustsOf(bundle), TrustedSince: trustedSince,
		NotAfter: cert.NotAfter, RenewAt: certs.RenewAt(cert), AuthorityNotAfter: signerCert.NotAfter,
	}))
	authority.ResourceVersion, server.ResourceVersion = "5", "6"
	return authority, server
}

// convergedWithTLS seeds a Running Database with TLS in mode, its
// certificates issued an hour before testNow, and returns its TLS Secret.
func (f *fixture) convergedWithTLS(db *dbv1alpha1.Database, mode dbv1alpha1.TLSMode) *corev1.Secret {
	authority, server, bundle := issuedTLS(f.t, db, mode, testNow.Add(-time.Hour))
	_, _, _, secret := f.converged(db)
	secret.Annotations = map[string]string{builder.AnnotationBundle: pemDigest(bundle)}
	secret.Data[builder.AuthorityKey] = bundle
	db.Status.TLS = tlsStatus(server)
	f.seed(authority, server)
	return server
}

// described is each action as "verb resource name", for a test of the
// order of writes whose objects hold random keys.
func described(actions []core.Action) []string {
	var out []string
	for _, a := range actions {
		name := ""
		switch a := a.(type) {
		case core.CreateAction:
			name = a.GetObject().(metav1.Object).GetName()
		case core.GetAction:
			name = a.GetName()
		case core.PatchAction:
			name = a.GetName()
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+" "+name)
	}
	return out
}

// A new Database with TLS: the authority, then the server's Secret, then
// the credentials Secret with the authority in ca.crt; the server
// certificate verifies, through that ca.crt, for every name a client
// reaches the servers by, and the StatefulSet mounts it.
func TestTLSIssuedForANewDatabase(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := tlsDatabase(dbv1alpha1.TLSEnabled)
	f.seed(db)
	r, recorder := f.newReconciler()
	if _, _, err := r.sync(ctx, db); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	got := strings.Join(described(f.kubeActions()), "\n")
	want := strings.Join([]string{
		"create secrets orders-ca",
		"create secrets orders-tls",
		"create secrets orders-credentials",
		"create services orders-headless",
		"create services orders",
		"create statefulsets orders",
	}, "\n")
	if got != want {
		t.Fatalf("actions\n%s\nwant\n%s", got, want)
	}
	created := map[string]*corev1.Secret{}
	var sts runtime.Object
	for _, a := range f.kubeActions() {
		if c, ok := a.(core.CreateAction); ok {
			if s, ok := c.GetObject().(*corev1.Secret); ok {
				created[s.Name] = s
			} else if a.GetResource().Resource == "statefulsets" {
				sts = c.GetObject()
			}
		}
	}
	server, creds, authority := created["orders-tls"], created["orders-credentials"], created["orders-ca"]
	if server.Type != corev1.SecretTypeTLS || !strings.Contains(string(server.Data["pg_hba.conf"]), "\nhost all all all scram-sha-256\n") {
		t.Errorf("TLS Secret of type %s, pg_hba.conf %q: want kubernetes.io/tls, and host rules (Enabled)", server.Type, server.Data["pg_hba.conf"])
	}
	if string(creds.Data["ca.crt"]) != string(authority.Data["ca.crt"]) || string(server.Data["ca.crt"]) != string(authority.Data["ca.crt"]) {
		t.Errorf("the credentials' and the servers' ca.crt are not the authority's certificate")
	}
	for _, name := range []string{"orders.default.svc", "orders", "orders-ro.default.svc.cluster.local", "orders-1.orders-headless.default.svc"} {
		if err := certs.Verify(server.Data["tls.crt"], creds.Data["ca.crt"], name, testNow); err != nil {
			t.Errorf("a client of the credentials Secret cannot verify the server as %s: %v", name, err)
		}
	}
	if err := certs.Verify(server.Data["tls.crt"], creds.Data["ca.crt"], "orders.other.svc", testNow); err == nil {
		t.Errorf("the certificate verifies for a name it must not have")
	}
	if b, _ := json.Marshal(sts); !strings.Contains(string(b), `"secretName":"orders-tls"`) {
		t.Errorf("the StatefulSet does not mount Secret orders-tls")
	}
	events := strings.Join(actiontest.Drain(recorder), "\n")
	if !strings.Contains(events, "Created Secret orders-ca, Secret orders-tls, Secret orders-credentials") {
		t.Errorf("events %q, want one naming the Secrets created", events)
	}
	// The status says when the certificate expires.
	st := writtenTLSStatus(t, f)
	if st == nil || st.Mode != dbv1alpha1.TLSEnabled || st.Secret != "orders-tls" || st.NotAfter == nil || !st.NotAfter.Time.Equal(testNow.Add(certs.ServerValidity).Truncate(time.Second)) {
		t.Errorf("status.tls %+v, want Enabled, Secret orders-tls, expiring 90 days from now", st)
	}
}

// A Database whose certificate is current costs nothing: no read of the
// authority, no write.
func TestTLSSteadyStateWritesNothing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := tlsDatabase(dbv1alpha1.TLSRequired)
	f.convergedWithTLS(db, dbv1alpha1.TLSRequired)
	f.run(ctx, ref(db), synced)
}

// A certificate is issued again, by the same authority, once a third of
// its life is left, and when the mode or the names change; the
// credentials' ca.crt stays, as the authority did not change.
func TestTLSReissued(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(f *fixture, db *dbv1alpha1.Database)
		mode    dbv1alpha1.TLSMode
		because string
	}{
		{"renewal due", func(f *fixture, db *dbv1alpha1.Database) {
			f.clock.SetTime(testNow.Add(61 * 24 * time.Hour))
		}, dbv1alpha1.TLSEnabled, "a third of the last one's life was left"},
		{"mode changed", func(f *fixture, db *dbv1alpha1.Database) {
			db.Spec.TLS.Mode = dbv1alpha1.TLSRequired
		}, dbv1alpha1.TLSRequired, "spec.tls.mode changed from Enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := tlsDatabase(dbv1alpha1.TLSEnabled)
			old := f.convergedWithTLS(db, dbv1alpha1.TLSEnabled)
			tc.setup(f, db)
			r, recorder := f.newReconciler()
			_, _, _ = r.sync(ctx, db)
			acts := described(f.kubeActions())
			if len(acts) < 3 || acts[0] != "get secrets orders-ca" || acts[1] != "get secrets orders-tls" || acts[2] != "patch secrets orders-tls" {
				t.Fatalf("actions %v, want the authority and the bundle read, then the TLS Secret applied", acts)
			}
			for _, a := range acts[3:] {
				if strings.Contains(a, "orders-credentials") || strings.Contains(a, "orders-ca") {
					t.Errorf("unexpected %s: the authority did not change", a)
				}
			}
			applied := f.kubeActions()[2].(core.PatchAction)
			var s corev1.Secret
			if err := json.Unmarshal(applied.GetPatch(), &s); err != nil {
				t.Fatal(err)
			}
			if s.Annotations[builder.AnnotationSerial] == old.Annotations[builder.AnnotationSerial] || s.Annotations[builder.AnnotationTLSMode] != string(tc.mode) {
				t.Errorf("annotations %v: want a new serial, for mode %s", s.Annotations, tc.mode)
			}
			if err := certs.Verify(s.Data["tls.crt"], old.Data["ca.crt"], "orders.default.svc", f.clock.Now()); err != nil {
				t.Errorf("the new certificate is not the same authority's: %v", err)
			}
			events := strings.Join(actiontest.Drain(recorder), "\n")
			if !strings.Contains(events, "Normal Updated Issued a server certificate for TLS "+string(tc.mode)) || !strings.Contains(events, tc.because) {
				t.Errorf("events %q, want the certificate issued again because %s", events, tc.because)
			}
		})
	}
}

// A credentials Secret made before TLS gets the authority in ca.crt, by a
// patch of that key alone. The passes right after it, on a cache that does
// not show that patch yet, patch nothing again: the API server would refuse
// a patch with the cache's resourceVersion (a failed sync in the kwok
// suite's TestRestartWhileCreating), and the event would say it twice.
// Once the cache shows the patch, nothing is remembered of it.
func TestTLSAuthorityAddedToAnOlderSecret(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := tlsDatabase(dbv1alpha1.TLSEnabled)
	f.convergedWithTLS(db, dbv1alpha1.TLSEnabled)
	creds := f.secretLister[0]
	delete(creds.Data, builder.AuthorityKey)
	creds.Annotations = nil
	creds.ResourceVersion = "10"
	r, recorder := f.newReconciler()
	actiontest.ResourceVersions(f.kubeclient)
	if _, _, err := r.sync(ctx, db); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	acts := described(f.kubeActions())
	if strings.Join(acts, ",") != "get secrets orders-tls,patch secrets orders-credentials" {
		t.Fatalf("actions %v, want the TLS Secret read and the credentials patched", acts)
	}
	patch := string(f.kubeActions()[1].(core.PatchAction).GetPatch())
	for _, key := range []string{"password", "username", "uri"} {
		if strings.Contains(patch, `"`+key+`"`) {
			t.Errorf("the patch %s touches %s", patch, key)
		}
	}
	if events := strings.Join(actiontest.Drain(recorder), "\n"); !strings.Contains(events, "ca.crt holds the authorities") {
		t.Errorf("events %q, want the ca.crt added said", events)
	}
	stored, err := f.kubeclient.CoreV1().Secrets(db.Namespace).Get(ctx, creds.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.ResourceVersion == creds.ResourceVersion || stored.Data[builder.AuthorityKey] == nil {
		t.Fatalf("the API server's Secret %v was not patched", stored)
	}

	for _, step := range []struct {
		name string
		seen bool
	}{{"the cache behind the patch", false}, {"the cache showing it", true}} {
		f.kubeclient.ClearActions()
		if step.seen {
			f.update(f.caches.Secrets, stored)
		}
		if _, _, err := r.sync(ctx, db); err != nil {
			t.Fatalf("%s: Sync: %v", step.name, err)
		}
		if acts := described(f.kubeActions()); len(acts) > 0 {
			t.Errorf("%s: actions %v, want none", step.name, acts)
		}
		if events := actiontest.Drain(recorder); len(events) > 0 {
			t.Errorf("%s: events %q, want none", step.name, events)
		}
	}
	if _, ok := r.tlsWritten.Get(ChildKey{Kind: "Secret", Namespace: db.Namespace, Name: creds.Name}); ok {
		t.Errorf("the patched Secret is still remembered after the cache showed it")
	}
}

// A Secret of the TLS Secret's name that the Database does not control is
// left alone, and named.
func TestTLSSecretOfAnotherOwner(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := tlsDatabase(dbv1alpha1.TLSEnabled)
	server := f.convergedWithTLS(db, dbv1alpha1.TLSEnabled)
	server.OwnerReferences = nil
	r, _ := f.newReconciler()
	_, _, err := r.sync(ctx, db)
	if err == nil || !strings.Contains(err.Error(), "Secret default/orders-tls already exists and is not controlled by this Database") {
		t.Fatalf("Sync: %v, want the conflict named", err)
	}
	for _, a := range described(f.kubeActions()) {
		if strings.Contains(a, "orders-tls") && !strings.HasPrefix(a, "get") {
			t.Errorf("%s: the Secret of another owner is written", a)
		}
	}
}

// writtenTLSStatus is status.tls as the pass's status write set it.
func writtenTLSStatus(t *testing.T, f *fixture) *dbv1alpha1.TLSStatus {
	t.Helper()
	return statusWritten(t, f).TLS
}

// statusWritten is the status the pass's status write set.
func statusWritten(t *testing.T, f *fixture) dbv1alpha1.DatabaseStatus {
	t.Helper()
	for _, a := range f.client.Actions() {
		if p, ok := a.(core.PatchAction); ok && a.GetSubresource() == "status" {
			var db dbv1alpha1.Database
			if err := json.Unmarshal(p.GetPatch(), &db); err != nil {
				t.Fatal(err)
			}
			return db.Status
		}
	}
	t.Fatal("no status written")
	return dbv1alpha1.DatabaseStatus{}
}

// A server that reloaded and still presents the earlier certificate (the
// kubelet has not written the Secret's change into its volume yet) is not
// made to reload again by the passes that follow, but once certificatePoll
// is over: every reload makes MySQL's new connections wait.
func TestTLSServersReloadAtMostEachPoll(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := tlsDatabase(dbv1alpha1.TLSEnabled)
	server := f.convergedWithTLS(db, dbv1alpha1.TLSEnabled)
	serial := server.Annotations[builder.AnnotationSerial]
	f.readyPod(db, "0ld")
	r, recorder := f.newReconciler()

	present := "present certificate " + serial + " on 10.0.0.5"
	f.calls = []string{present}
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.expectVolumesRefreshed(db, 0, serial)
	f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)
	f.kubeactions = nil
	// The cache shows the pod annotated.
	f.podLister[0].Annotations = map[string]string{builder.AnnotationCertificateSerial: serial}
	f.updatePods()
	// The passes before certificatePoll is over: no reload.
	f.calls = nil
	f.clock.SetTime(testNow.Add(certificatePoll - time.Second))
	f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)
	var recheck *RecheckError
	if !errors.As(f.err, &recheck) || recheck.After != time.Second {
		t.Errorf("Sync: %v, want the servers asked again in 1s, when certificatePoll is over", f.err)
	}
	// Reloaded again, and the pod, annotated already, is not patched again.
	f.calls = []string{present}
	f.clock.SetTime(testNow.Add(certificatePoll))
	f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)
}

// expectVolumesRefreshed expects pod k of db annotated with the serial of
// the certificate its server is to present, on that pod's UID, for the
// kubelet to write the TLS Secret into its volume at once.
func (f *fixture) expectVolumesRefreshed(db *dbv1alpha1.Database, k int, serial string) {
	f.expectPodMetadata(db, k, "annotations", map[string]any{builder.AnnotationCertificateSerial: serial})
}

// A server that presents an earlier certificate than the TLS Secret's (a
// renewal the kubelet has written into its volume) is reloaded, and asked
// again soon; once it presents the Secret's, it is not asked again.
func TestTLSServersPresentTheSecretsCertificate(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := tlsDatabase(dbv1alpha1.TLSEnabled)
	server := f.convergedWithTLS(db, dbv1alpha1.TLSEnabled)
	serial := server.Annotations[builder.AnnotationSerial]
	f.readyPod(db, "0ld")
	f.sql.Files = map[string]string{"10.0.0.5": serial}
	r, recorder := f.newReconciler()

	f.calls = []string{"present certificate " + serial + " on 10.0.0.5"}
	f.expectGet(secretsResource, "default", "orders-credentials")
	f.expectVolumesRefreshed(db, 0, serial)
	f.syncAndCheck(ctx, r, recorder, ref(db), pollServers)
	f.kubeactions = nil
	var recheck *RecheckError
	if !errors.As(f.err, &recheck) || recheck.After != certificatePoll {
		t.Errorf("Sync: %v, want the servers asked again in %s", f.err, certificatePoll)
	}
	// Reloaded: asked again once certificatePoll is over, it presents the
	// Secret's now, and is remembered.
	f.clock.SetTime(testNow.Add(certificatePoll))
	f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	f.calls = nil
	f.syncAndCheck(ctx, r, recorder, ref(db), synced)
}

// rotating seeds a Running Database whose authority is new, beside an old
// one in the bundle since trustedSince, and whose servers' certificate the
// new one signed (signedByNew) or the old; it returns the new authority.
func (f *fixture) rotating(db *dbv1alpha1.Database, signedByNew bool, trustedSince time.Time) (server *corev1.Secret, newCA certs.Issued) {
	t := f.t
	issuedAt := testNow.Add(-time.Hour)
	oldCA := newAuthority(t, "old", issuedAt.Add(-24*time.Hour))
	newCA = newAuthority(t, "new", issuedAt)
	signer := oldCA
	if signedByNew {
		signer = newCA
	}
	bundle := certs.Bundle(issuedAt, oldCA.CertPEM, newCA.CertPEM)
	authority, server := tlsSecrets(t, db, db.Spec.TLSMode(), newCA, signer, bundle, issuedAt, trustedSince)
	_, _, _, secret := f.converged(db)
	secret.Annotations = map[string]string{builder.AnnotationBundle: pemDigest(bundle)}
	secret.Data[builder.AuthorityKey] = bundle
	db.Status.TLS = tlsStatus(server)
	f.seed(authority, server)
	return server, newCA
}

// readyPod seeds db's first pod, ready, at 10.0.0.5, its server
// presenting serial.
func (f *fixture) readyPod(db *dbv1alpha1.Database, serial string) {
	pod := startingPod(db)
	pod.UID, pod.ResourceVersion, pod.Status.PodIP = "orders-0-uid", "7", "10.0.0.5"
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	pod.Status.ContainerStatuses[0].Ready = true
	f.seed(pod)
	f.sql.Facts["10.0.0.5"] = &ha.Facts{}
	f.sql.Presents = map[string]string{"10.0.0.5": serial}
}

// appliedSecret is the Secret the patch action i applied.
func appliedSecret(t *testing.T, f *fixture, i int) corev1.Secret {
	t.Helper()
	var s corev1.Secret
	if err := json.Unmarshal(f.kubeActions()[i].(core.PatchAction).GetPatch(), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A rotation of the authority, step by step: a new one is trusted beside
// the old before it signs; it signs once the trust period is over; the
// old one is dropped once every server presents the new one's certificate,
// and not before.
func TestTLSAuthorityRotation(t *testing.T) {
	t.Run("the authority's Secret gone: a new one, trusted beside the old", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := tlsDatabase(dbv1alpha1.TLSEnabled)
		server := f.convergedWithTLS(db, dbv1alpha1.TLSEnabled)
		f.secretLister = slices.DeleteFunc(f.secretLister, func(s *corev1.Secret) bool { return s.Name == "orders-ca" })
		f.kubeobjects = slices.DeleteFunc(f.kubeobjects, func(o runtime.Object) bool {
			s, ok := o.(*corev1.Secret)
			return ok && s.Name == "orders-ca"
		})
		r, recorder := f.newReconciler()
		_, _, err := r.sync(ctx, db)
		var recheck *RecheckError
		if !errors.As(err, &recheck) || recheck.After != DefaultTrustPeriod {
			t.Errorf("Sync: %v, want to look again once the trust period (%s) is over", err, DefaultTrustPeriod)
		}
		acts := described(f.kubeActions())
		if strings.Join(acts, ",") != "create secrets orders-ca,get secrets orders-tls,patch secrets orders-tls,patch secrets orders-credentials" {
			t.Fatalf("actions %v, want the new authority made, the bundle written beside the certificate, and the credentials' ca.crt", acts)
		}
		applied := appliedSecret(t, f, 2)
		bundle, _ := certs.ParseAll(applied.Data["ca.crt"])
		if string(applied.Data["tls.crt"]) != string(server.Data["tls.crt"]) || len(bundle) != 2 {
			t.Errorf("the servers' Secret holds a new certificate (%v) or a bundle of %d authorities: want the old certificate, and both authorities",
				string(applied.Data["tls.crt"]) != string(server.Data["tls.crt"]), len(bundle))
		}
		if events := strings.Join(actiontest.Drain(recorder), "\n"); !strings.Contains(events, "Made a new certificate authority (Secret orders-ca was gone)") {
			t.Errorf("events %q, want the new authority said", events)
		}
	})
	t.Run("within the trust period: nothing written", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := tlsDatabase(dbv1alpha1.TLSEnabled)
		f.rotating(db, false, testNow.Add(-time.Minute))
		r, _ := f.newReconciler()
		_, _, err := r.sync(ctx, db)
		var recheck *RecheckError
		if !errors.As(err, &recheck) || recheck.After != DefaultTrustPeriod-time.Minute {
			t.Errorf("Sync: %v, want to look again when the trust period is over, in %s", err, DefaultTrustPeriod-time.Minute)
		}
		if acts := described(f.kubeActions()); len(acts) > 0 {
			t.Errorf("actions %v, want none", acts)
		}
	})
	t.Run("the trust period over: the new authority signs", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := tlsDatabase(dbv1alpha1.TLSEnabled)
		f.rotating(db, false, testNow.Add(-DefaultTrustPeriod))
		r, _ := f.newReconciler()
		_, _, _ = r.sync(ctx, db)
		acts := described(f.kubeActions())
		if strings.Join(acts, ",") != "get secrets orders-ca,get secrets orders-tls,patch secrets orders-tls" {
			t.Fatalf("actions %v, want the authority and the bundle read, and a certificate of the new authority written", acts)
		}
		applied := appliedSecret(t, f, 2)
		if bundle, _ := certs.ParseAll(applied.Data["ca.crt"]); len(bundle) != 2 {
			t.Errorf("the bundle holds %d authorities, want both until every server presents the new one's certificate", len(bundle))
		}
		ca, _ := certs.Parse(f.secretLister[1].Data["ca.crt"])
		if err := certs.Verify(applied.Data["tls.crt"], f.secretLister[1].Data["ca.crt"], "orders.default.svc", testNow); err != nil || applied.Annotations[builder.AnnotationIssuer] != ca.SerialNumber.Text(16) {
			t.Errorf("the new certificate (issuer %s) is not the new authority's: %v", applied.Annotations[builder.AnnotationIssuer], err)
		}
	})
	for _, tc := range []struct {
		name     string
		presents func(server *corev1.Secret) string
		want     string
	}{
		{"a server presents the old certificate: both stay trusted", func(*corev1.Secret) string { return "0ld" }, ""},
		{"every server presents the new one's certificate: the old one dropped", func(s *corev1.Secret) string { return s.Annotations[builder.AnnotationSerial] },
			"get secrets orders-ca,get secrets orders-tls,patch secrets orders-tls,patch secrets orders-credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := tlsDatabase(dbv1alpha1.TLSEnabled)
			server, _ := f.rotating(db, true, testNow.Add(-DefaultTrustPeriod))
			f.readyPod(db, tc.presents(server))
			r, _ := f.newReconciler()
			// The first pass asks the server; the second acts on its answer.
			_, _, _ = r.sync(ctx, db)
			f.kubeclient.ClearActions()
			_, _, _ = r.sync(ctx, db)
			got := described(f.kubeActions())
			if strings.Join(got, ",") != tc.want {
				t.Fatalf("actions of the second pass %v, want %s", got, tc.want)
			}
			if len(got) > 3 {
				if bundle, _ := certs.ParseAll(appliedSecret(t, f, 2).Data["ca.crt"]); len(bundle) != 1 {
					t.Errorf("the bundle holds %d authorities, want the new one alone", len(bundle))
				}
			}
		})
	}
}

package reconcile

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/plan"
)

// mongoTLSDatabase is a MongoDB Database with TLS Enabled.
func mongoTLSDatabase() *dbv1alpha1.Database {
	db := newDatabase("orders", "mongodb", "7.0", 1)
	db.Spec.TLS = &dbv1alpha1.TLSSpec{Mode: dbv1alpha1.TLSEnabled}
	return db
}

// convergedMongoWithTLS seeds a Running MongoDB Database with TLS, its
// certificates issued at issuedAt, its pods carrying the certificate's
// serial number as a pass writes them; it returns its TLS Secret.
func (f *fixture) convergedMongoWithTLS(db *dbv1alpha1.Database, issuedAt time.Time) *corev1.Secret {
	authority, server, bundle := issuedTLS(f.t, db, db.Spec.TLSMode(), issuedAt)
	sts, headless, svc, secret := actiontest.Converged(f.t, db)
	desired := actiontest.Object[appsv1.StatefulSet](f.t, plan.Compute(db, plan.Observed{CertificateSerial: server.Annotations[builder.AnnotationSerial]}).StatefulSet)
	desired.Status, desired.Generation = sts.Status, sts.Generation
	secret.Annotations = map[string]string{builder.AnnotationBundle: pemDigest(bundle)}
	secret.Data[builder.AuthorityKey] = bundle
	db.Status.TLS = tlsStatus(server)
	f.seed(db, desired, headless, svc, secret, authority, server)
	return server
}

// patchedTemplateSerial is the certificate serial of the pod template the
// pass's patch of the StatefulSet applied; "" when it patched none.
func patchedTemplateSerial(t *testing.T, f *fixture) string {
	t.Helper()
	for _, a := range f.kubeActions() {
		if p, ok := a.(core.PatchAction); ok && a.GetResource().Resource == "statefulsets" {
			var sts appsv1.StatefulSet
			if err := json.Unmarshal(p.GetPatch(), &sts); err != nil {
				t.Fatal(err)
			}
			return sts.Spec.Template.Annotations[builder.AnnotationSerial]
		}
	}
	return ""
}

// A new MongoDB Database with TLS: its TLS Secret holds mongod's key file
// (the key, then the certificate), and its pods carry the certificate's
// serial number from their first start.
func TestMongoDBTLSNewDatabase(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := mongoTLSDatabase()
	f.seed(db)
	r, _ := f.newReconciler()
	if _, _, err := r.sync(ctx, db); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	want := "create secrets orders-ca,create secrets orders-tls,create secrets orders-credentials,create services orders-headless,create services orders,create statefulsets orders"
	if got := strings.Join(described(f.kubeActions()), ","); got != want {
		t.Fatalf("actions %s, want %s", got, want)
	}
	var server *corev1.Secret
	var sts *appsv1.StatefulSet
	for _, a := range f.kubeActions() {
		switch o := a.(core.CreateAction).GetObject().(type) {
		case *corev1.Secret:
			if o.Name == "orders-tls" {
				server = o
			}
		case *appsv1.StatefulSet:
			sts = o
		}
	}
	if got, want := string(server.Data["mongodb.pem"]), string(server.Data["tls.key"])+string(server.Data["tls.crt"]); got != want {
		t.Errorf("mongodb.pem is not the key, then the certificate")
	}
	if got := sts.Spec.Template.Annotations[builder.AnnotationSerial]; got == "" || got != server.Annotations[builder.AnnotationSerial] {
		t.Errorf("pod template serial %q, want the certificate's, %s", got, server.Annotations[builder.AnnotationSerial])
	}
}

// A MongoDB Database whose certificate is current costs nothing.
func TestMongoDBTLSSteadyStateWritesNothing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := mongoTLSDatabase()
	f.convergedMongoWithTLS(db, testNow.Add(-time.Hour))
	f.run(ctx, ref(db), synced)
}

// A renewal of a MongoDB Database's certificate rolls its pods in the
// same pass (mongod reads it at start only): the StatefulSet's template
// carries the new serial number.
func TestMongoDBTLSRenewalRestarts(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := mongoTLSDatabase()
	old := f.convergedMongoWithTLS(db, testNow.Add(-time.Hour))
	f.clock.SetTime(testNow.Add(61 * 24 * time.Hour))
	r, _ := f.newReconciler()
	_, _, _ = r.sync(ctx, db)
	acts := strings.Join(described(f.kubeActions()), ",")
	if !strings.HasPrefix(acts, "get secrets orders-ca,get secrets orders-tls,patch secrets orders-tls,") || !strings.Contains(acts, "patch statefulsets orders") {
		t.Fatalf("actions %s, want the certificate issued again and the StatefulSet patched", acts)
	}
	renewed := appliedSecret(t, f, 2)
	serial := renewed.Annotations[builder.AnnotationSerial]
	if got := patchedTemplateSerial(t, f); got != serial || serial == old.Annotations[builder.AnnotationSerial] {
		t.Errorf("pod template serial %q, want the new certificate's %s", got, serial)
	}
}

// A MongoDB Database's old authority leaves the bundle once every ready
// pod was made with the new one's certificate (its template's serial
// number), and not before: no server is asked, as none can be.
func TestMongoDBTLSAuthorityDroppedOnceThePodsRestarted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		podMade func(server *corev1.Secret) string
		dropped bool
	}{
		{"a pod made with the old certificate: both stay trusted", func(*corev1.Secret) string { return "0ld" }, false},
		{"every pod made with the new one's: the old one dropped", func(s *corev1.Secret) string { return s.Annotations[builder.AnnotationSerial] }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := mongoTLSDatabase()
			server, _ := f.rotating(db, true, testNow.Add(-DefaultTrustPeriod))
			f.readyPod(db, "")
			f.podLister[len(f.podLister)-1].Annotations = map[string]string{builder.AnnotationSerial: tc.podMade(server)}
			r, _ := f.newReconciler()
			_, _, _ = r.sync(ctx, db)
			acts := strings.Join(described(f.kubeActions()), ",")
			if got := strings.HasPrefix(acts, "get secrets orders-ca,get secrets orders-tls,patch secrets orders-tls,patch secrets orders-credentials"); got != tc.dropped {
				t.Errorf("actions %s: the old authority dropped %v, want %v", acts, got, tc.dropped)
			}
		})
	}
}

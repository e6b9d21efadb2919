package reconcile

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/certs"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// suppliedDatabase is a PostgreSQL Database whose servers take the
// certificate of the user's Secret orders-cert.
func suppliedDatabase() *dbv1alpha1.Database {
	db := tlsDatabase(dbv1alpha1.TLSEnabled)
	db.Spec.TLS.SecretName = "orders-cert"
	return db
}

// userSecret is the user's Secret orders-cert, labelled for the
// controller, at resourceVersion rv: a certificate ca signs for dnsNames
// (db's names when nil), as cert-manager writes it.
func userSecret(t *testing.T, db *dbv1alpha1.Database, ca certs.Issued, dnsNames []string, rv string) (*corev1.Secret, certs.Issued) {
	t.Helper()
	if dnsNames == nil {
		dnsNames = serverNames(db)
	}
	issued, err := certs.IssueServer(rand.Reader, ca, dnsNames, testNow.Add(-time.Hour), certs.ServerValidity)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "orders-cert", Namespace: db.Namespace, UID: "cert-uid", ResourceVersion: rv,
			Labels: map[string]string{dbv1alpha1.LabelTLS: "true"}},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": issued.CertPEM, "tls.key": issued.KeyPEM, "ca.crt": ca.CertPEM},
	}, issued
}

// copiedSecret is db's TLS Secret holding the certificate of user (signed
// by ca) with bundle, trusted since trustedSince, as a pass copies it.
func copiedSecret(t *testing.T, db *dbv1alpha1.Database, user *corev1.Secret, ca certs.Issued, bundle []byte, trustedSince time.Time) *corev1.Secret {
	t.Helper()
	cert, _ := certs.Parse(user.Data["tls.crt"])
	caCert, _ := certs.Parse(ca.CertPEM)
	server := actiontest.Object[corev1.Secret](t, builder.NewTLSSecret(db, actiontest.Engine(t, db), builder.ServerCertificate{
		CertPEM: user.Data["tls.crt"], KeyPEM: user.Data["tls.key"], BundlePEM: bundle,
		Mode: string(db.Spec.TLSMode()), Names: serverNamesDigest(db), Serial: cert.SerialNumber.Text(16), Issuer: caCert.SerialNumber.Text(16),
		Bundle: pemDigest(bundle), Trusts: trustsOf(bundle), TrustedSince: trustedSince,
		NotAfter: cert.NotAfter, AuthorityNotAfter: caCert.NotAfter,
		Source: "orders-cert/cert-uid/" + user.ResourceVersion, SourceTrusts: trustsOf(ca.CertPEM),
	}))
	server.ResourceVersion = "6"
	return server
}

// convergedWithSupplied seeds a Running Database whose servers present the
// certificate of user, copied with bundle: its own authority's Secret, its
// TLS Secret and credentials.
func (f *fixture) convergedWithSupplied(db *dbv1alpha1.Database, user *corev1.Secret, ca certs.Issued, bundle []byte) *corev1.Secret {
	return f.convergedWithCopy(db, user, user, ca, bundle, testNow.Add(-time.Hour))
}

// convergedWithCopy is convergedWithSupplied, the certificate of copied
// trusted since trustedSince, and the user's Secret now user.
func (f *fixture) convergedWithCopy(db *dbv1alpha1.Database, copied, user *corev1.Secret, ca certs.Issued, bundle []byte, trustedSince time.Time) *corev1.Secret {
	own, _, _ := issuedTLS(f.t, db, db.Spec.TLSMode(), testNow.Add(-24*time.Hour))
	server := copiedSecret(f.t, db, copied, ca, bundle, trustedSince)
	_, _, _, secret := f.converged(db)
	secret.Annotations = map[string]string{builder.AnnotationBundle: pemDigest(bundle)}
	secret.Data[builder.AuthorityKey] = bundle
	db.Status.TLS = tlsStatus(server)
	f.seed(own, server, user)
	return server
}

// A new Database with the user's certificate: the servers' Secret is a
// copy of it, the clients' ca.crt its authorities, and the Database's own
// authority is kept for a hand-back.
func TestTLSSuppliedForANewDatabase(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := suppliedDatabase()
	theirs := newAuthority(t, "theirs", testNow.Add(-time.Hour))
	user, _ := userSecret(t, db, theirs, nil, "3")
	f.seed(db, user)
	r, recorder := f.newReconciler()
	if _, _, err := r.sync(ctx, db); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	want := "create secrets orders-ca,get secrets orders-cert,create secrets orders-tls,create secrets orders-credentials," +
		"create services orders-headless,create services orders,create statefulsets orders"
	if got := strings.Join(described(f.kubeActions()), ","); got != want {
		t.Fatalf("actions\n%s\nwant\n%s", got, want)
	}
	created := map[string]*corev1.Secret{}
	for _, a := range f.kubeActions() {
		if c, ok := a.(core.CreateAction); ok {
			if s, ok := c.GetObject().(*corev1.Secret); ok {
				created[s.Name] = s
			}
		}
	}
	server, creds := created["orders-tls"], created["orders-credentials"]
	if string(server.Data["tls.crt"]) != string(user.Data["tls.crt"]) || string(server.Data["tls.key"]) != string(user.Data["tls.key"]) ||
		string(server.Data["ca.crt"]) != string(theirs.CertPEM) || string(creds.Data["ca.crt"]) != string(theirs.CertPEM) {
		t.Errorf("the servers' Secret and the credentials' ca.crt are not the user's certificate and authority")
	}
	if got := server.Annotations[builder.AnnotationSource]; got != "orders-cert/cert-uid/3" {
		t.Errorf("source %q, want the user's Secret at the version copied", got)
	}
	st := writtenTLSStatus(t, f)
	if st == nil || st.SuppliedBy != "orders-cert" || st.RenewAt != nil || st.NotAfter == nil || st.Problem != "" {
		t.Errorf("status.tls %+v, want supplied by orders-cert, its expiry, no renewal of the controller's, no problem", st)
	}
	if events := strings.Join(actiontest.Drain(recorder), "\n"); !strings.Contains(events, "The servers take the certificate of Secret orders-cert") {
		t.Errorf("events %q, want the copy said", events)
	}
}

// A new Database whose user's Secret cannot serve waits for it, and says
// why in its Ready condition and a Warning: nothing of the servers' is
// made.
func TestTLSSuppliedThatCannotServe(t *testing.T) {
	for _, tc := range []struct {
		name string
		user func(t *testing.T, db *dbv1alpha1.Database) *corev1.Secret
		gets bool
		want string
	}{
		{"not labelled", func(t *testing.T, db *dbv1alpha1.Database) *corev1.Secret {
			s, _ := userSecret(t, db, newAuthority(t, "theirs", testNow), nil, "3")
			s.Labels = nil
			return s
		}, false, "Secret orders-cert, named by spec.tls.secretName, is not among the Secrets labelled dbcontroller.io/tls=true, the only ones the controller reads: create it with that label, or label it (kubectl label secret orders-cert dbcontroller.io/tls=true; cert-manager: the Certificate's secretTemplate); the Database waits for it"},
		{"a name missing", func(t *testing.T, db *dbv1alpha1.Database) *corev1.Secret {
			s, _ := userSecret(t, db, newAuthority(t, "theirs", testNow), []string{"orders.default.svc"}, "3")
			return s
		}, true, "Secret orders-cert, named by spec.tls.secretName, cannot serve: tls.crt does not serve orders-ro.default.svc through ca.crt's authorities"},
		{"another certificate's key", func(t *testing.T, db *dbv1alpha1.Database) *corev1.Secret {
			ca := newAuthority(t, "theirs", testNow)
			s, _ := userSecret(t, db, ca, nil, "3")
			_, other := userSecret(t, db, ca, nil, "3")
			s.Data["tls.key"] = other.KeyPEM
			return s
		}, true, "cannot serve: tls.key is not the key of tls.crt's certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := suppliedDatabase()
			f.seed(db, tc.user(t, db))
			r, recorder := f.newReconciler()
			_, _, err := r.sync(ctx, db)
			var problem *status.Problem
			if !errors.As(err, &problem) || problem.Reason != status.ReasonTLSSecretInvalid || !strings.Contains(problem.Message, tc.want) || problem.Recheck {
				t.Fatalf("Sync: %v, want a problem TLSSecretInvalid saying %q, with no recheck (the Secret's change brings a pass)", err, tc.want)
			}
			want := "create secrets orders-ca"
			if tc.gets {
				want += ",get secrets orders-cert"
			}
			if got := strings.Join(described(f.kubeActions()), ","); got != want {
				t.Errorf("actions %s, want %s", got, want)
			}
			ready := writtenReady(t, f)
			if ready == nil || ready.Reason != status.ReasonTLSSecretInvalid || !strings.Contains(ready.Message, tc.want) {
				t.Errorf("Ready %+v, want the problem", ready)
			}
			if events := strings.Join(actiontest.Drain(recorder), "\n"); !strings.Contains(events, "Warning TLSSecretInvalid") {
				t.Errorf("events %q, want a Warning", events)
			}
		})
	}
}

// writtenReady is the Ready condition as the pass's status write set it.
func writtenReady(t *testing.T, f *fixture) *metav1.Condition {
	t.Helper()
	return meta.FindStatusCondition(statusWritten(t, f).Conditions, dbv1alpha1.ConditionReady)
}

// A running Database that takes the user's certificate in place of its
// own, step by step: the user's authority is trusted beside its own
// first; the certificate is copied once the trust period is over; its own
// authority leaves the bundle once every server presents the user's.
func TestTLSSuppliedReplacesTheOwn(t *testing.T) {
	t.Run("the user's authority trusted first", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := suppliedDatabase()
		server := f.convergedWithTLS(db, dbv1alpha1.TLSEnabled)
		user, _ := userSecret(t, db, newAuthority(t, "theirs", testNow), nil, "3")
		f.seed(user)
		r, recorder := f.newReconciler()
		_, _, err := r.sync(ctx, db)
		var recheck *RecheckError
		if !errors.As(err, &recheck) || recheck.After != DefaultTrustPeriod {
			t.Errorf("Sync: %v, want to look again once the trust period is over", err)
		}
		want := "get secrets orders-cert,get secrets orders-tls,patch secrets orders-tls,patch secrets orders-credentials"
		if got := strings.Join(described(f.kubeActions()), ","); got != want {
			t.Fatalf("actions %s, want %s", got, want)
		}
		applied := appliedSecret(t, f, 2)
		bundle, _ := certs.ParseAll(applied.Data["ca.crt"])
		if string(applied.Data["tls.crt"]) != string(server.Data["tls.crt"]) || len(bundle) != 2 {
			t.Errorf("want the servers' own certificate kept, and both authorities trusted; got %d", len(bundle))
		}
		if events := strings.Join(actiontest.Drain(recorder), "\n"); !strings.Contains(events, "The authorities of Secret orders-cert are trusted beside the others from now") {
			t.Errorf("events %q, want the trust said", events)
		}
	})
	t.Run("the trust period over: copied", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := suppliedDatabase()
		theirs := newAuthority(t, "theirs", testNow)
		user, _ := userSecret(t, db, theirs, nil, "3")
		ownCA := newAuthority(t, "own", testNow.Add(-24*time.Hour))
		bundle := certs.Bundle(testNow, ownCA.CertPEM, theirs.CertPEM)
		authority, server := tlsSecrets(t, db, dbv1alpha1.TLSEnabled, ownCA, ownCA, bundle, testNow.Add(-24*time.Hour), testNow.Add(-DefaultTrustPeriod))
		_, _, _, secret := f.converged(db)
		secret.Annotations = map[string]string{builder.AnnotationBundle: pemDigest(bundle)}
		secret.Data[builder.AuthorityKey] = bundle
		db.Status.TLS = tlsStatus(server)
		f.seed(authority, server, user)
		r, _ := f.newReconciler()
		_, _, _ = r.sync(ctx, db)
		want := "get secrets orders-cert,get secrets orders-tls,patch secrets orders-tls"
		if got := strings.Join(described(f.kubeActions()), ","); got != want {
			t.Fatalf("actions %s, want %s", got, want)
		}
		applied := appliedSecret(t, f, 2)
		if b, _ := certs.ParseAll(applied.Data["ca.crt"]); string(applied.Data["tls.crt"]) != string(user.Data["tls.crt"]) || len(b) != 2 ||
			applied.Annotations[builder.AnnotationSource] != "orders-cert/cert-uid/3" {
			t.Errorf("want the user's certificate copied (source %q), both authorities still trusted (%d)", applied.Annotations[builder.AnnotationSource], len(b))
		}
	})
	for _, tc := range []struct {
		name     string
		presents func(server *corev1.Secret) string
		want     string
	}{
		{"a server presents the own certificate: both stay trusted", func(*corev1.Secret) string { return "0wn" }, ""},
		{"every server presents the user's: the own authority dropped", func(s *corev1.Secret) string { return s.Annotations[builder.AnnotationSerial] },
			"get secrets orders-tls,patch secrets orders-tls,patch secrets orders-credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := suppliedDatabase()
			theirs := newAuthority(t, "theirs", testNow)
			user, _ := userSecret(t, db, theirs, nil, "3")
			ownCA := newAuthority(t, "own", testNow.Add(-24*time.Hour))
			server := f.convergedWithSupplied(db, user, theirs, certs.Bundle(testNow, ownCA.CertPEM, theirs.CertPEM))
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
			if len(got) > 0 {
				if b, _ := certs.ParseAll(appliedSecret(t, f, 1).Data["ca.crt"]); len(b) != 1 || string(certs.Encode(b[0])) != string(theirs.CertPEM) {
					t.Errorf("the bundle holds %d authorities, want the user's alone", len(b))
				}
			}
		})
	}
}

// A running Database whose user's Secret changes to what cannot serve
// keeps its servers' certificate: status.tls.problem says why, with one
// Warning, and nothing is written but the status.
func TestTLSSuppliedChangedToWhatCannotServe(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := suppliedDatabase()
	theirs := newAuthority(t, "theirs", testNow)
	copied, _ := userSecret(t, db, theirs, nil, "3")
	user := copied.DeepCopy()
	user.ResourceVersion = "4"
	user.Data["ca.crt"] = newAuthority(t, "another", testNow).CertPEM
	f.convergedWithCopy(db, copied, user, theirs, theirs.CertPEM, testNow.Add(-time.Hour))
	r, recorder := f.newReconciler()
	if _, _, err := r.sync(ctx, db); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if got := strings.Join(described(f.kubeActions()), ","); got != "get secrets orders-cert" {
		t.Errorf("actions %s, want the user's Secret read, nothing written", got)
	}
	want := "Secret orders-cert, named by spec.tls.secretName, cannot serve: tls.crt does not serve orders.default.svc through ca.crt's authorities"
	st := writtenTLSStatus(t, f)
	if st == nil || !strings.HasPrefix(st.Problem, want) || !strings.HasSuffix(st.Problem, "; the servers keep the certificate they have") || st.SuppliedBy != "orders-cert" {
		t.Errorf("status.tls %+v, want the problem said, and the certificate still the one copied", st)
	}
	events := actiontest.Drain(recorder)
	if len(events) != 1 || !strings.HasPrefix(events[0], "Warning TLSSecretInvalid "+want) {
		t.Errorf("events %q, want one Warning", events)
	}
	if ready := writtenReady(t, f); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v: the servers serve", ready)
	}
}

// A Database whose servers present the user's certificate, as copied,
// costs nothing.
func TestTLSSuppliedSteadyStateWritesNothing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := suppliedDatabase()
	theirs := newAuthority(t, "theirs", testNow)
	user, _ := userSecret(t, db, theirs, nil, "3")
	f.convergedWithSupplied(db, user, theirs, theirs.CertPEM)
	f.run(ctx, ref(db), synced)
}

// spec.tls.secretName unset: the Database's own authority is trusted
// first, beside the user's, before it signs.
func TestTLSSuppliedHandedBack(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := suppliedDatabase()
	theirs := newAuthority(t, "theirs", testNow)
	user, _ := userSecret(t, db, theirs, nil, "3")
	server := f.convergedWithSupplied(db, user, theirs, theirs.CertPEM)
	db.Spec.TLS.SecretName = ""
	r, _ := f.newReconciler()
	_, _, err := r.sync(ctx, db)
	var recheck *RecheckError
	if !errors.As(err, &recheck) || recheck.After != DefaultTrustPeriod {
		t.Errorf("Sync: %v, want to look again once the trust period is over", err)
	}
	want := "get secrets orders-ca,get secrets orders-tls,patch secrets orders-tls,patch secrets orders-credentials"
	if got := strings.Join(described(f.kubeActions()), ","); got != want {
		t.Fatalf("actions %s, want %s", got, want)
	}
	applied := appliedSecret(t, f, 2)
	if b, _ := certs.ParseAll(applied.Data["ca.crt"]); string(applied.Data["tls.crt"]) != string(server.Data["tls.crt"]) || len(b) != 2 {
		t.Errorf("want the user's certificate kept, and the own authority trusted beside the user's (%d)", len(b))
	}
}

// The user's Secret renewed by the same authority is copied at once, the
// trust period or not: every client verifies with that authority already.
func TestTLSSuppliedRenewal(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := suppliedDatabase()
	theirs := newAuthority(t, "theirs", testNow)
	copied, _ := userSecret(t, db, theirs, nil, "3")
	renewed, _ := userSecret(t, db, theirs, nil, "4")
	f.convergedWithCopy(db, copied, renewed, theirs, theirs.CertPEM, testNow.Add(-time.Minute))
	r, _ := f.newReconciler()
	if _, _, err := r.sync(ctx, db); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	want := "get secrets orders-cert,get secrets orders-tls,patch secrets orders-tls"
	if got := strings.Join(described(f.kubeActions()), ","); got != want {
		t.Fatalf("actions %s, want %s", got, want)
	}
	if applied := appliedSecret(t, f, 2); string(applied.Data["tls.crt"]) != string(renewed.Data["tls.crt"]) {
		t.Errorf("the renewed certificate is not copied")
	}
}

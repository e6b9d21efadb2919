package reconcile

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/certs"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// A certificate the user supplies (spec.tls.secretName) reaches the
// servers through the same Secret <name>-tls as the controller's own: the
// controller never writes the user's Secret, and never lets the servers
// read it. Each version of it is checked (the key, the chain through its
// ca.crt, the names of the Services and pods) and copied, so that a
// Secret that cannot serve never reaches a server: a running Database's
// servers keep the certificate they have, and status.tls.problem says
// why. Authorities the clients do not trust yet join the bundle first, for
// the trust period, as the controller's own new authority does; the others
// leave it once every server presents the copied certificate. Its cache
// holds the user's Secret without data (labelled dbcontroller.io/tls: a
// change of it leads to its Databases), and each version is read once.

// suppliedNames are the names a supplied certificate must serve: the client
// Service (clients, replication, the Secret's host), the read-only Service
// and a pod through the headless Service (a backup's dump), in their
// namespaced forms, which the Secret's URIs and the pods use.
func suppliedNames(db *dbv1alpha1.Database) []string {
	return []string{names.Host(db), names.ReadOnlyHost(db),
		fmt.Sprintf("%s-0.%s.%s.svc", db.Name, names.HeadlessServiceName(db), db.Namespace)}
}

// ensureSuppliedTLS keeps the server Secret (server, nil when there is
// none) a copy of the certificate of the user's Secret.
func (p *pass) ensureSuppliedTLS(ctx context.Context, pods []*corev1.Pod, server *corev1.Secret, now time.Time) (tlsFindings, error) {
	r, db := p.r, p.db
	name := db.Spec.TLS.SecretName
	mode := string(db.Spec.TLSMode())
	user, err := p.read.userTLSSecret(db.Namespace, name)
	if apierrors.IsNotFound(err) {
		return suppliedProblem(server, fmt.Sprintf("Secret %s, named by spec.tls.secretName, is not among the Secrets labelled %s=true, the only ones the controller reads: create it with that label, or label it (kubectl label secret %s %s=true; cert-manager: the Certificate's secretTemplate)",
			name, dbv1alpha1.LabelTLS, name, dbv1alpha1.LabelTLS))
	}
	if err != nil {
		return tlsFindings{}, err
	}
	if server != nil && server.Annotations[builder.AnnotationSource] == sourceOf(user) {
		a := server.Annotations
		switch {
		case a[builder.AnnotationTLSMode] != mode:
			live, err := p.liveSecret(ctx, server.Name)
			if err != nil {
				return tlsFindings{}, err
			}
			c := serverCertificateOf(live)
			c.Mode = mode
			return p.writeServerSecret(ctx, server, c)
		case a[builder.AnnotationTrusts] != a[builder.AnnotationSourceTrusts] && p.allPresent(pods, a[builder.AnnotationSerial]):
			return p.trustSuppliedOnly(ctx, server, name, now)
		}
		return findingsOf(server), nil
	}

	// A version not copied yet: check it.
	live, err := p.liveSecret(ctx, name)
	if err != nil {
		return tlsFindings{}, err
	}
	chain, key, authorities := live.Data[builder.TLSCertKey], live.Data[builder.TLSKeyKey], live.Data[builder.AuthorityKey]
	s, err := certs.CheckSupplied(chain, key, authorities, suppliedNames(db), now)
	if err != nil {
		return suppliedProblem(server, fmt.Sprintf("Secret %s, named by spec.tls.secretName, cannot serve: %v", name, err))
	}
	own := certs.Bundle(now, authorities)
	c := builder.ServerCertificate{
		CertPEM: chain, KeyPEM: key, Mode: mode, Names: serverNamesDigest(db),
		Serial: s.Leaf.SerialNumber.Text(16), Issuer: s.Issuer.SerialNumber.Text(16),
		NotAfter: s.Leaf.NotAfter, AuthorityNotAfter: s.Issuer.NotAfter,
		Source: sourceOf(live), SourceTrusts: trustsOf(own),
	}
	if server == nil {
		found, err := p.writeServerSecret(ctx, nil, withBundle(c, nil, own, now))
		if err == nil {
			r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated, "The servers take the certificate of Secret %s (serial %s, valid until %s)",
				name, c.Serial, c.NotAfter.UTC().Format(time.RFC3339))
		}
		return found, err
	}
	a := server.Annotations
	for _, serial := range strings.Split(c.SourceTrusts, ",") {
		if !trusts(a[builder.AnnotationTrusts], serial) {
			return p.trustAuthority(ctx, server, live, now, "they sign the certificate of Secret "+name+", named by spec.tls.secretName")
		}
	}
	// A certificate of another authority than the one the servers present
	// waits for the trust period; a renewal by the same one does not, as
	// every client verifies with it already.
	if wait := annotatedTime(server, builder.AnnotationTrustedSince).Add(r.trustPeriod).Sub(now); wait > 0 && a[builder.AnnotationIssuer] != c.Issuer {
		found := findingsOf(server)
		found.pollAfter = wait
		return found, nil
	}
	current, err := p.liveSecret(ctx, server.Name)
	if err != nil {
		return tlsFindings{}, err
	}
	c = withBundle(c, server, certs.Bundle(now, current.Data[builder.AuthorityKey], own), now)
	found, err := p.writeServerSecret(ctx, server, c)
	if err == nil {
		r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated, "The servers take the certificate of Secret %s (serial %s, valid until %s), with a reload",
			name, c.Serial, c.NotAfter.UTC().Format(time.RFC3339))
	}
	return found, err
}

// sourceOf names the version of the user's Secret s, as the server
// Secret's AnnotationSource records the one it copied.
func sourceOf(s *corev1.Secret) string {
	return fmt.Sprintf("%s/%s/%s", s.Name, s.UID, s.ResourceVersion)
}

// suppliedProblem reports what is wrong with the user's Secret: a
// Database with no server Secret yet waits for it (a problem of the pass,
// in its Ready condition); one with a server Secret keeps it, and
// status.tls.problem says why.
func suppliedProblem(server *corev1.Secret, why string) (tlsFindings, error) {
	if server == nil {
		return tlsFindings{}, &status.Problem{Reason: status.ReasonTLSSecretInvalid, Message: why + "; the Database waits for it"}
	}
	found := findingsOf(server)
	found.status.Problem = why + "; the servers keep the certificate they have"
	return found, nil
}

// trustSuppliedOnly drops from the bundle of server the authorities that
// are not the user's Secret's (as it was copied): every server presents
// its certificate.
func (p *pass) trustSuppliedOnly(ctx context.Context, server *corev1.Secret, name string, now time.Time) (tlsFindings, error) {
	r := p.r
	live, err := p.liveSecret(ctx, server.Name)
	if err != nil {
		return tlsFindings{}, err
	}
	all, err := certs.ParseAll(live.Data[builder.AuthorityKey])
	if err != nil {
		return tlsFindings{}, fmt.Errorf("reading the bundle of Secret %s: %w", server.Name, err)
	}
	var kept [][]byte
	for _, c := range all {
		if trusts(server.Annotations[builder.AnnotationSourceTrusts], c.SerialNumber.Text(16)) {
			kept = append(kept, certs.Encode(c))
		}
	}
	found, err := p.writeBundle(ctx, server, live, certs.Bundle(now, kept...), now)
	if err == nil {
		r.recorder.Eventf(p.db, corev1.EventTypeNormal, ReasonUpdated,
			"Every server presents the certificate of Secret %s: only its authorities are trusted now", name)
	}
	return found, err
}

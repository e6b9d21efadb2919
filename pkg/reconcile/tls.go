package reconcile

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/klog/v2"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/certs"
	"github.com/dbcontroller/database-controller/pkg/ha"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/tlsconfig"
	"github.com/dbcontroller/database-controller/pkg/ttl"
)

// The TLS step keeps the Secret <name>-tls that the servers read their
// certificate from: issued by the Database's own authority (<name>-ca),
// for the names of its Services, and issued again when the mode or the
// names change, or when a third of its life is left. Its cache holds no
// Secret data, so it decides from the Secret's annotations, and reads the
// authority's key only to sign. The clock is an input: a settled Database
// gets a full pass at least every SettledTTL, which is far inside the 30
// days a certificate has left when it is renewed. Keys and serial numbers
// come from crypto/rand, whatever Config.Random is: no test can choose them.

// tlsFindings is what the TLS step found.
type tlsFindings struct {
	// decided says the step ran to its end; status is then the status's
	// TLS, nil with TLS Disabled.
	decided bool
	status  *dbv1alpha1.TLSStatus
	// bundle is the digest of the authorities' bundle the servers'
	// certificate is trusted through, and bundlePEM the bundle when the
	// step wrote it (else the credentials step reads it when it needs it).
	bundle    string
	bundlePEM []byte
	created   []string
	// serial is the server certificate's serial number (hex).
	serial string
	// pollAfter is when to look again: to ask the servers again which
	// certificate they present, or to have a new authority sign once its
	// trust period is over; 0 for no need.
	pollAfter time.Duration
}

// ensureTLS keeps the TLS Secrets of a Database whose mode is not
// Disabled, and returns what they say. A new authority (one due for
// replacement, or one whose Secret was deleted) is trusted beside the old
// ones for the trust period before it signs the servers' certificate, so
// that clients read a bundle that trusts both first; the old ones are
// dropped from the bundle once every ready server presents the new
// authority's certificate.
func (p *pass) ensureTLS(ctx context.Context, pods []*corev1.Pod) (tlsFindings, error) {
	r, db, e := p.r, p.db, p.plan.Engine
	mode := db.Spec.TLSMode()
	if mode == dbv1alpha1.TLSDisabled || e.Runtime().TLS == nil {
		return tlsFindings{decided: true}, nil
	}
	now := r.clock.Now()
	server, err := p.tlsSecret(names.TLSSecretName(db))
	if err != nil {
		return tlsFindings{}, err
	}
	authority, err := p.tlsSecret(names.AuthoritySecretName(db))
	if err != nil {
		return tlsFindings{}, err
	}
	due := authority == nil || !now.Before(annotatedTime(authority, builder.AnnotationRenewAt))
	if db.Spec.TLS.SecretName != "" {
		// The user's certificate; the Database's own authority is kept
		// (made, or replaced, alone) for a hand-back.
		var created []string
		if due {
			if _, created, err = p.makeAuthority(ctx, authority != nil, now); err != nil {
				return tlsFindings{created: created}, err
			}
		}
		found, err := p.ensureSuppliedTLS(ctx, pods, server, now)
		found.created = append(created, found.created...)
		return found, err
	}
	if due {
		return p.newAuthority(ctx, server, authority, now)
	}
	if server == nil {
		return p.issue(ctx, nil, now, "")
	}
	a := server.Annotations
	caSerial := authority.Annotations[builder.AnnotationSerial]
	switch {
	case !trusts(a[builder.AnnotationTrusts], caSerial):
		// Handed back from the user's certificate: clients trust the
		// Database's own authority first, for the trust period.
		own, err := p.liveSecret(ctx, names.AuthoritySecretName(db))
		if err != nil {
			return tlsFindings{}, err
		}
		return p.trustAuthority(ctx, server, own, now, "the certificate is the Database's own again (spec.tls.secretName unset)")
	case a[builder.AnnotationIssuer] != caSerial:
		// A renewal or a change of mode waits for the trust period too:
		// until then the servers keep the certificate, and the mode, it
		// was issued for, and status.tls says so.
		if wait := annotatedTime(server, builder.AnnotationTrustedSince).Add(r.trustPeriod).Sub(now); wait > 0 {
			found := findingsOf(server)
			found.pollAfter = wait
			return found, nil
		}
		return p.issue(ctx, server, now, "the Database's new authority signs it, trusted since "+a[builder.AnnotationTrustedSince])
	case a[builder.AnnotationTLSMode] != string(mode) || a[builder.AnnotationTLSNames] != serverNamesDigest(db) ||
		!now.Before(annotatedTime(server, builder.AnnotationRenewAt)):
		return p.issue(ctx, server, now, reissueReason(server, mode, serverNamesDigest(db)))
	case a[builder.AnnotationTrusts] != caSerial && p.allPresent(pods, a[builder.AnnotationSerial]):
		return p.trustOnly(ctx, server, now)
	}
	return findingsOf(server), nil
}

// tlsSecret reads one of db's TLS Secrets from the cache, or as this
// process last wrote it when the cache is behind: nil when there is none.
// One the Database does not control is a conflict, left alone.
func (p *pass) tlsSecret(name string) (*corev1.Secret, error) {
	r, db := p.r, p.db
	key := ChildKey{Kind: "Secret", Namespace: db.Namespace, Name: name}
	r.expectations.Look(key)
	s, err := p.read.secret(db.Namespace, name)
	switch {
	case err == nil && !metav1.IsControlledBy(s, db):
		return nil, conflict(db, "Secret", name)
	case err == nil:
		r.expectations.Observed(key)
		return r.tlsWritten.newest(key, s), nil
	case !apierrors.IsNotFound(err):
		return nil, err
	case r.expectations.Pending(key):
		return nil, &WaitingError{Kind: "Secret", Name: name}
	}
	return nil, nil
}

// findingsOf is what the server Secret s says, as it is.
func findingsOf(s *corev1.Secret) tlsFindings {
	a := s.Annotations
	return tlsFindings{decided: true, status: tlsStatus(s), bundle: a[builder.AnnotationBundle], serial: a[builder.AnnotationSerial]}
}

// annotatedTime is the time of annotation key of s; the zero time when it
// has none.
func annotatedTime(s *corev1.Secret, key string) time.Time {
	t, _ := time.Parse(time.RFC3339, s.Annotations[key])
	return t
}

// allPresent reports whether every ready server of pods presented the
// certificate of serial, as last asked (presentCertificates), and one did.
// A server that reads its certificate only at start presents the one its
// pod was made with (builder.WithCertificateSerial).
func (p *pass) allPresent(pods []*corev1.Pod, serial string) bool {
	atStart := p.plan.Engine != nil && p.plan.Engine.Runtime().TLS != nil && p.plan.Engine.Runtime().TLS.RestartToRenew
	n := 0
	for _, pod := range pods {
		if !podReady(pod) || pod.DeletionTimestamp != nil {
			continue
		}
		s, ok := p.r.presented.Get(pod.UID)
		if atStart {
			s, ok = pod.Annotations[builder.AnnotationSerial], true
		}
		if !ok || s != serial {
			return false
		}
		n++
	}
	return n > 0
}

// newAuthority makes the Database a new authority, written to its Secret.
// A Database with no server certificate yet gets one it signs at once;
// otherwise the server Secret keeps its certificate and gains the new
// authority in its bundle, which the credentials Secret follows, and the
// new one signs after the trust period.
func (p *pass) newAuthority(ctx context.Context, server, old *corev1.Secret, now time.Time) (tlsFindings, error) {
	r, db := p.r, p.db
	ca, created, err := p.makeAuthority(ctx, old != nil, now)
	if err != nil {
		return tlsFindings{created: created}, err
	}
	if server == nil {
		found, err := p.issueWith(ctx, nil, ca, certs.Bundle(now, ca.CertPEM), now, "")
		found.created = append(created, found.created...)
		return found, err
	}
	found, err := p.rebundle(ctx, server, now, ca.CertPEM)
	found.created = append(created, found.created...)
	if err == nil {
		why := "the last one was due for replacement"
		if old == nil {
			why = "Secret " + names.AuthoritySecretName(db) + " was gone"
		}
		r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated,
			"Made a new certificate authority (%s), trusted beside the old one from now; it signs the servers' certificate from %s",
			why, now.Add(r.trustPeriod).UTC().Format(time.RFC3339))
		found.pollAfter = r.trustPeriod
	}
	return found, err
}

// makeAuthority makes the Database a new authority and writes it to its
// Secret (over the one there when exists), and says whether it created it.
func (p *pass) makeAuthority(ctx context.Context, exists bool, now time.Time) (certs.Issued, []string, error) {
	db := p.db
	ca, err := certs.NewAuthority(rand.Reader, db.Namespace+"/"+db.Name+" database-controller authority", now, certs.AuthorityValidity)
	if err != nil {
		return certs.Issued{}, nil, fmt.Errorf("making the certificate authority: %w", err)
	}
	authority, err := builder.AuthorityOf(ca)
	if err != nil {
		return certs.Issued{}, nil, err
	}
	written, made, err := p.writeTLSSecret(ctx, builder.NewAuthoritySecret(db, authority), exists)
	if err != nil {
		return certs.Issued{}, nil, err
	}
	if made {
		return ca, []string{"Secret " + written.Name}, nil
	}
	return ca, nil, nil
}

// trustAuthority adds the authorities of Secret from's ca.crt to the
// bundle of server, which keeps its certificate: clients read a bundle
// that trusts them for the trust period before the servers present a
// certificate they sign. why is said in an event.
func (p *pass) trustAuthority(ctx context.Context, server, from *corev1.Secret, now time.Time, why string) (tlsFindings, error) {
	r := p.r
	found, err := p.rebundle(ctx, server, now, from.Data[builder.AuthorityKey])
	if err == nil {
		r.recorder.Eventf(p.db, corev1.EventTypeNormal, ReasonUpdated,
			"The authorities of Secret %s are trusted beside the others from now (%s); the servers present a certificate they sign from %s",
			from.Name, why, now.Add(r.trustPeriod).UTC().Format(time.RFC3339))
		found.pollAfter = r.trustPeriod
	}
	return found, err
}

// rebundle writes server again with its certificate and the bundle of its
// authorities and more.
func (p *pass) rebundle(ctx context.Context, server *corev1.Secret, now time.Time, more []byte) (tlsFindings, error) {
	live, err := p.liveSecret(ctx, server.Name)
	if err != nil {
		return tlsFindings{}, err
	}
	return p.writeBundle(ctx, server, live, certs.Bundle(now, live.Data[builder.AuthorityKey], more), now)
}

// writeBundle writes server again as live holds it, but with bundle.
func (p *pass) writeBundle(ctx context.Context, server, live *corev1.Secret, bundle []byte, now time.Time) (tlsFindings, error) {
	return p.writeServerSecret(ctx, server, withBundle(serverCertificateOf(live), server, bundle, now))
}

// withBundle is c trusted through bundle: since now, or, when bundle is
// the one server (nil: none) has already, since then.
func withBundle(c builder.ServerCertificate, server *corev1.Secret, bundle []byte, now time.Time) builder.ServerCertificate {
	c.BundlePEM, c.Bundle, c.Trusts, c.TrustedSince = bundle, pemDigest(bundle), trustsOf(bundle), now
	if server != nil && server.Annotations[builder.AnnotationBundle] == c.Bundle {
		c.TrustedSince = annotatedTime(server, builder.AnnotationTrustedSince)
	}
	return c
}

// trusts reports whether the serial numbers list (comma-separated) holds
// serial.
func trusts(list, serial string) bool {
	return strings.Contains(","+list+",", ","+serial+",")
}

// liveSecret reads the Secret name of db's namespace from the API server:
// the cache holds no Secret data.
func (p *pass) liveSecret(ctx context.Context, name string) (*corev1.Secret, error) {
	s, err := p.r.kube.CoreV1().Secrets(p.db.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	return s, nil
}

// issue issues the servers' certificate again with the Database's
// authority, read from its Secret, keeping the trusted bundle of server
// (the authority's alone for a Database with none); why, when not empty,
// is said in an event.
func (p *pass) issue(ctx context.Context, server *corev1.Secret, now time.Time, why string) (tlsFindings, error) {
	live, err := p.liveSecret(ctx, names.AuthoritySecretName(p.db))
	if err != nil {
		return tlsFindings{}, err
	}
	ca := certs.Issued{CertPEM: live.Data[builder.AuthorityKey], KeyPEM: live.Data[builder.AuthorityKeyKey]}
	bundle := certs.Bundle(now, ca.CertPEM)
	if server != nil {
		current, err := p.liveSecret(ctx, server.Name)
		if err != nil {
			return tlsFindings{}, err
		}
		bundle = certs.Bundle(now, current.Data[builder.AuthorityKey], ca.CertPEM)
	}
	return p.issueWith(ctx, server, ca, bundle, now, why)
}

// issueWith signs a server certificate with ca and writes it, with bundle,
// over server (nil: made).
func (p *pass) issueWith(ctx context.Context, server *corev1.Secret, ca certs.Issued, bundle []byte, now time.Time, why string) (tlsFindings, error) {
	r, db := p.r, p.db
	issued, err := certs.IssueServer(rand.Reader, ca, serverNames(db), now, certs.ServerValidity)
	if err != nil {
		return tlsFindings{}, fmt.Errorf("issuing the server certificate: %w", err)
	}
	cert, err := certs.Parse(issued.CertPEM)
	if err != nil {
		return tlsFindings{}, err
	}
	caCert, err := certs.Parse(ca.CertPEM)
	if err != nil {
		return tlsFindings{}, err
	}
	found, err := p.writeServerSecret(ctx, server, withBundle(builder.ServerCertificate{
		CertPEM: issued.CertPEM, KeyPEM: issued.KeyPEM,
		Mode: string(db.Spec.TLSMode()), Names: serverNamesDigest(db), Serial: cert.SerialNumber.Text(16), Issuer: caCert.SerialNumber.Text(16),
		NotAfter: cert.NotAfter, RenewAt: certs.RenewAt(cert), AuthorityNotAfter: caCert.NotAfter,
	}, server, bundle, now))
	if err == nil && why != "" {
		r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated, "Issued a server certificate for TLS %s, valid until %s: %s",
			db.Spec.TLSMode(), cert.NotAfter.UTC().Format(time.RFC3339), why)
	}
	return found, err
}

// trustOnly drops from the bundle of server every authority but the
// Database's own: every server presents its certificate.
func (p *pass) trustOnly(ctx context.Context, server *corev1.Secret, now time.Time) (tlsFindings, error) {
	r, db := p.r, p.db
	ca, err := p.liveSecret(ctx, names.AuthoritySecretName(db))
	if err != nil {
		return tlsFindings{}, err
	}
	live, err := p.liveSecret(ctx, server.Name)
	if err != nil {
		return tlsFindings{}, err
	}
	found, err := p.writeBundle(ctx, server, live, certs.Bundle(now, ca.Data[builder.AuthorityKey]), now)
	if err == nil {
		r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated,
			"Every server presents the certificate of the Database's new authority: the authorities before it are no longer trusted")
	}
	return found, err
}

// serverCertificateOf is what the server Secret s holds.
func serverCertificateOf(s *corev1.Secret) builder.ServerCertificate {
	a := s.Annotations
	return builder.ServerCertificate{
		CertPEM: s.Data[builder.TLSCertKey], KeyPEM: s.Data[builder.TLSKeyKey], BundlePEM: s.Data[builder.AuthorityKey],
		Mode: a[builder.AnnotationTLSMode], Names: a[builder.AnnotationTLSNames], Serial: a[builder.AnnotationSerial],
		Issuer: a[builder.AnnotationIssuer], Bundle: a[builder.AnnotationBundle], Trusts: a[builder.AnnotationTrusts],
		TrustedSince: annotatedTime(s, builder.AnnotationTrustedSince), NotAfter: annotatedTime(s, builder.AnnotationNotAfter),
		RenewAt: annotatedTime(s, builder.AnnotationRenewAt), AuthorityNotAfter: annotatedTime(s, builder.AnnotationAuthorityNA),
		Source: a[builder.AnnotationSource], SourceTrusts: a[builder.AnnotationSourceTrusts],
	}
}

// trustsOf is the serial numbers of the authorities in bundle.
func trustsOf(bundle []byte) string {
	all, _ := certs.ParseAll(bundle)
	serials := make([]string, 0, len(all))
	for _, c := range all {
		serials = append(serials, c.SerialNumber.Text(16))
	}
	return strings.Join(serials, ",")
}

// writeServerSecret writes the server Secret of c over server (nil: made),
// and returns what it then says.
func (p *pass) writeServerSecret(ctx context.Context, server *corev1.Secret, c builder.ServerCertificate) (tlsFindings, error) {
	written, made, err := p.writeTLSSecret(ctx, builder.NewTLSSecret(p.db, p.plan.Engine, c), server != nil)
	if err != nil {
		return tlsFindings{}, err
	}
	found := findingsOf(written)
	found.bundlePEM = c.BundlePEM
	if made {
		found.created = []string{"Secret " + written.Name}
	}
	return found, nil
}

// writeTLSSecret creates one of the TLS Secrets, or, when it exists,
// applies desired over it; made says it created it. It remembers what it
// wrote until the cache shows it.
func (p *pass) writeTLSSecret(ctx context.Context, desired *corev1ac.SecretApplyConfiguration, exists bool) (*corev1.Secret, bool, error) {
	r := p.r
	key := ChildKey{Kind: "Secret", Namespace: p.db.Namespace, Name: *desired.Name}
	written, made, err := p.createOrApplySecret(ctx, desired, exists)
	if err != nil {
		return nil, false, err
	}
	written.Data = nil
	r.tlsWritten.Put(key, written)
	if made {
		r.expectations.Created(key, written.ResourceVersion)
	}
	return written, made, nil
}

// createOrApplySecret creates desired, or, when it exists, applies it;
// made says it created it.
func (p *pass) createOrApplySecret(ctx context.Context, desired *corev1ac.SecretApplyConfiguration, exists bool) (*corev1.Secret, bool, error) {
	secrets := p.r.kube.CoreV1().Secrets(p.db.Namespace)
	if !exists {
		var secret corev1.Secret
		if err := builder.Convert(desired, &secret); err != nil {
			return nil, false, err
		}
		made, err := secrets.Create(ctx, &secret, createOptions)
		if err == nil {
			return made, true, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, false, fmt.Errorf("creating Secret %s: %w", secret.Name, err)
		}
		// Not in the filtered cache: someone else's, or ours without its labels.
		live, err := p.liveSecret(ctx, secret.Name)
		if err != nil {
			return nil, false, err
		}
		if !metav1.IsControlledBy(live, p.db) {
			return nil, false, conflict(p.db, "Secret", secret.Name)
		}
	}
	written, err := secrets.Apply(ctx, desired, repairOptions)
	if err != nil {
		return nil, false, fmt.Errorf("writing Secret %s: %w", *desired.Name, err)
	}
	return written, false, nil
}

// reissueReason says why the certificate of existing is issued again.
func reissueReason(existing *corev1.Secret, mode dbv1alpha1.TLSMode, wantNames string) string {
	a := existing.Annotations
	switch {
	case a[builder.AnnotationTLSMode] != string(mode):
		return fmt.Sprintf("spec.tls.mode changed from %s", a[builder.AnnotationTLSMode])
	case a[builder.AnnotationTLSNames] != wantNames:
		return "the names it must cover changed"
	}
	return "a third of the last one's life was left (renewed at " + a[builder.AnnotationRenewAt] + ")"
}

// tlsStatus is the status's TLS, from the annotations of the TLS Secret.
func tlsStatus(s *corev1.Secret) *dbv1alpha1.TLSStatus {
	a := s.Annotations
	st := &dbv1alpha1.TLSStatus{Mode: dbv1alpha1.TLSMode(a[builder.AnnotationTLSMode]), Secret: s.Name}
	st.SuppliedBy, _, _ = strings.Cut(a[builder.AnnotationSource], "/")
	for k, into := range map[string]**metav1.Time{builder.AnnotationNotAfter: &st.NotAfter, builder.AnnotationRenewAt: &st.RenewAt,
		builder.AnnotationAuthorityNA: &st.AuthorityNotAfter} {
		if t := annotatedTime(s, k); !t.IsZero() {
			*into = &metav1.Time{Time: t}
		}
	}
	return st
}

// serverNames are the names db's server certificate covers, and
// serverNamesDigest their digest, for the Secret's annotation.
func serverNames(db *dbv1alpha1.Database) []string {
	return certs.ServerNames(names.ServiceName(db), names.ReadOnlyServiceName(db), names.HeadlessServiceName(db), db.Namespace, names.ClusterDomain)
}

func serverNamesDigest(db *dbv1alpha1.Database) string {
	return pemDigest([]byte(strings.Join(serverNames(db), ",")))
}

// pemDigest is a short digest of b, for an annotation.
func pemDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// ensureAuthorityInSecret adds the authorities' bundle to the credentials
// Secret (ca.crt) when it is not the servers' (by the digests in their
// annotations), so that a client of the Secret verifies the servers. No
// other key changes.
func (p *pass) ensureAuthorityInSecret(ctx context.Context, t tlsFindings) error {
	r, db := p.r, p.db
	if t.bundle == "" {
		return nil
	}
	name := names.SecretName(db)
	key := ChildKey{Kind: "Secret", Namespace: db.Namespace, Name: name}
	cached, err := p.read.secret(db.Namespace, name)
	if err != nil || !metav1.IsControlledBy(cached, db) {
		// Missing or not ours: ensureSecret has said so, or created it with
		// the bundle, which the cache shows later.
		return nil
	}
	// A pass soon after this one patched it may find the cache behind the
	// patch: what the patch returned says the bundle is there (and a patch
	// with the cache's resourceVersion would be refused).
	if r.tlsWritten.newest(key, cached).Annotations[builder.AnnotationBundle] == t.bundle {
		return nil
	}
	bundle := t.bundlePEM
	if bundle == nil {
		live, err := p.liveSecret(ctx, names.TLSSecretName(db))
		if err != nil {
			return err
		}
		bundle = live.Data[builder.AuthorityKey]
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": cached.ResourceVersion, "annotations": map[string]string{builder.AnnotationBundle: t.bundle}},
		"data":     map[string][]byte{builder.AuthorityKey: bundle},
	})
	if err != nil {
		return err
	}
	patched, err := r.kube.CoreV1().Secrets(db.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return fmt.Errorf("adding the authorities (ca.crt) to Secret %s: %w", name, err)
	}
	patched.Data = nil
	r.tlsWritten.Put(key, patched)
	r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated,
		"Updated Secret %s: ca.crt holds the authorities that sign the servers' certificates, for clients that verify them; no other key changed", name)
	return nil
}

// writtenSecrets remembers the Secrets the TLS step last wrote until the
// cache shows them, so that a pass on a cache behind its write does not
// issue a certificate again, nor add the authorities to the credentials
// Secret again.
type writtenSecrets struct {
	*ttl.Set[ChildKey, *corev1.Secret]
}

// newest is written's Secret when the cache's is older, else cached.
func (w writtenSecrets) newest(key ChildKey, cached *corev1.Secret) *corev1.Secret {
	written, ok := w.Get(key)
	if !ok {
		return cached
	}
	if c, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, written.ResourceVersion); err == nil && c < 0 {
		return written
	}
	w.Remove(key)
	return cached
}

// authoritiesOf is what the controller verifies db's servers against: the
// credentials Secret's ca.crt, as clients do, while the servers have TLS
// (status.tls, or the TLS step's Secret when the status is yet to say);
// none otherwise, and the connections are in plain text. They are kept
// per Database, compact (tlsconfig.Compact).
func (p *pass) authoritiesOf(credentials *corev1.Secret) string {
	if p.db.Spec.TLSMode() == dbv1alpha1.TLSDisabled || p.plan.Engine == nil || p.plan.Engine.Runtime().TLS == nil {
		return ""
	}
	return tlsconfig.Compact(credentials.Data[builder.AuthorityKey])
}

// CertificatePresenter connects to the server at host:port over TLS,
// verified against cred.Authorities, and returns the serial number of the
// certificate it presented; when that is not serial, it has the server
// read its files again and says it reloaded (pgsql.PresentCertificate).
type CertificatePresenter func(ctx context.Context, host string, port int32, cred ha.Credentials, serial string) (presented string, reloaded bool, err error)

// certificatePoll is how soon a server that reloaded is asked again which
// certificate it presents: the kubelet writes a Secret's change into the
// pods' volumes within about a minute, and the reload reads what is
// there when it runs. It is also as often as a server is made to reload,
// whatever brings passes: a reload is not free for its clients (MySQL's
// ALTER INSTANCE RELOAD TLS waits for the handshakes under way, and new
// connections wait behind it), and passes come many times a second while
// the pods change.
const certificatePoll = 15 * time.Second

// reload is when a server was made to reload its certificate, for the
// TLS Secret's of serial number serial.
type reload struct {
	serial string
	at     time.Time
}

// soonest is the sooner of two waits, 0 being none.
func soonest(a, b time.Duration) time.Duration {
	if b > 0 && (a == 0 || b < a) {
		return b
	}
	return a
}

// presentCertificates makes every ready server of db present the
// certificate of the TLS Secret: one asked once, with no restart, which a
// renewal or a new mode needs, as the kubelet updates the mounted files
// but the server reads them at start and on reload only. A server that
// presents it is remembered by its pod, and not asked again; one that
// cannot be asked (not answering, no TLS yet) is asked on the next pass
// its pod's change brings.
func (p *pass) presentCertificates(ctx context.Context, pods []*corev1.Pod, t tlsFindings) (time.Duration, error) {
	r := p.r
	present := r.presenters[p.db.Spec.Engine]
	if t.status == nil || t.serial == "" || present == nil {
		return 0, nil
	}
	logger := klog.FromContext(ctx)
	var (
		cred      ha.Credentials
		read      bool
		pollAfter time.Duration
	)
	for _, pod := range pods {
		if !podReady(pod) || pod.Status.PodIP == "" || pod.DeletionTimestamp != nil {
			continue
		}
		if s, ok := r.presented.Get(pod.UID); ok && s == t.serial {
			continue
		}
		if rl, ok := r.reloaded.Get(pod.UID); ok && rl.serial == t.serial {
			if wait := certificatePoll - r.clock.Since(rl.at); wait > 0 {
				// Reloaded less than certificatePoll ago: asked again then.
				pollAfter = soonest(pollAfter, wait)
				continue
			}
		}
		if !read {
			var err error
			if cred, err = p.credentials(ctx); err != nil {
				return 0, err
			}
			read = true
		}
		if cred.Authorities == "" {
			// The credentials Secret has no ca.crt yet: its patch brings a pass.
			return 0, nil
		}
		presented, reloaded, err := present(ctx, pod.Status.PodIP, p.plan.Engine.Runtime().Port, cred, t.serial)
		switch {
		case err != nil:
			logger.V(2).Info("Could not ask the server which certificate it presents", "pod", klog.KObj(pod), "err", err)
		case presented == t.serial:
			r.presented.Put(pod.UID, t.serial)
		case reloaded:
			logger.V(2).Info("The server presented an earlier certificate: it reloaded", "pod", klog.KObj(pod), "presented", presented, "serial", t.serial)
			r.reloaded.Put(pod.UID, reload{serial: t.serial, at: r.clock.Now()})
			pollAfter = soonest(pollAfter, certificatePoll)
			if pod.Annotations[builder.AnnotationCertificateSerial] != t.serial {
				p.refreshVolumes(ctx, pod, t.serial)
			}
		}
	}
	return pollAfter, nil
}

// refreshVolumes has the kubelet write the TLS Secret of certificate
// serial into pod's volumes now, for the server's next reload
// (certificatePoll later) to read: it annotates the pod with the serial
// (builder.AnnotationCertificateSerial), on the pod's UID, and a change
// of a pod makes the kubelet sync it, its Secret volumes with it. Without
// it the files change at the kubelet's next sync of the pod, a minute or
// more later. A failure is logged and left: the kubelet writes the files
// in its own time, and the server is asked again all the same.
func (p *pass) refreshVolumes(ctx context.Context, pod *corev1.Pod, serial string) {
	err := p.r.patchPodMetadata(ctx, pod, "annotations", map[string]any{builder.AnnotationCertificateSerial: serial})
	if err != nil && !podReplaced(err) {
		klog.FromContext(ctx).V(2).Info("Could not annotate the pod for the kubelet to write its Secrets into its volumes now", "pod", klog.KObj(pod), "err", err)
	}
}

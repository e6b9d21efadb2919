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
	// pollAfter is when to ask the servers again which certificate they
	// present; 0 for no need.
	pollAfter time.Duration
}

// ensureTLS keeps the TLS Secrets of a Database whose mode is not
// Disabled, and returns what they say.
func (p *pass) ensureTLS(ctx context.Context) (tlsFindings, error) {
	r, db, e := p.r, p.db, p.plan.Engine
	mode := db.Spec.TLSMode()
	if mode == dbv1alpha1.TLSDisabled || e.Runtime().TLS == nil {
		return tlsFindings{decided: true}, nil
	}
	now := r.clock.Now()
	name := names.TLSSecretName(db)
	key := ChildKey{Kind: "Secret", Namespace: db.Namespace, Name: name}
	wantNames := serverNamesDigest(db)
	existing, err := p.read.secret(db.Namespace, name)
	if err == nil {
		existing = r.tlsWritten.newest(key, existing)
	}
	switch {
	case err == nil && !metav1.IsControlledBy(existing, db):
		return tlsFindings{}, conflict(db, "Secret", name)
	case err == nil:
		r.expectations.Observed(key)
		a := existing.Annotations
		renewAt, perr := time.Parse(time.RFC3339, a[builder.AnnotationRenewAt])
		if perr == nil && a[builder.AnnotationTLSMode] == string(mode) && a[builder.AnnotationTLSNames] == wantNames && now.Before(renewAt) {
			return tlsFindings{decided: true, status: tlsStatus(existing), bundle: a[builder.AnnotationBundle], serial: a[builder.AnnotationSerial]}, nil
		}
	case !apierrors.IsNotFound(err):
		return tlsFindings{}, err
	case r.expectations.Pending(key):
		return tlsFindings{}, &WaitingError{Kind: "Secret", Name: name}
	}

	authority, created, err := p.authority(ctx, now)
	if err != nil {
		return tlsFindings{created: created}, err
	}
	issued, err := certs.IssueServer(rand.Reader, authority, certs.ServerNames(names.ServiceName(db), names.ReadOnlyServiceName(db),
		names.HeadlessServiceName(db), db.Namespace, names.ClusterDomain), now, certs.ServerValidity)
	if err != nil {
		return tlsFindings{created: created}, fmt.Errorf("issuing the server certificate: %w", err)
	}
	cert, err := certs.Parse(issued.CertPEM)
	if err != nil {
		return tlsFindings{created: created}, err
	}
	caCert, err := certs.Parse(authority.CertPEM)
	if err != nil {
		return tlsFindings{created: created}, err
	}
	bundle := certs.Bundle(now, authority.CertPEM)
	desired := builder.NewTLSSecret(db, e, builder.ServerCertificate{
		CertPEM: issued.CertPEM, KeyPEM: issued.KeyPEM, BundlePEM: bundle,
		Mode: string(mode), Names: wantNames, Serial: cert.SerialNumber.Text(16), Bundle: pemDigest(bundle),
		NotAfter: cert.NotAfter, RenewAt: certs.RenewAt(cert), AuthorityNotAfter: caCert.NotAfter,
	})
	written, made, err := p.writeTLSSecret(ctx, desired, existing != nil)
	if err != nil {
		return tlsFindings{created: created}, err
	}
	written.Data = nil
	r.tlsWritten.put(key, written)
	if made {
		r.expectations.Created(key)
		created = append(created, "Secret "+name)
	} else {
		r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated, "Issued a server certificate for TLS %s, valid until %s: %s",
			mode, cert.NotAfter.UTC().Format(time.RFC3339), reissueReason(existing, mode, wantNames))
	}
	return tlsFindings{decided: true, status: tlsStatus(written), bundle: pemDigest(bundle), bundlePEM: bundle, created: created,
		serial: cert.SerialNumber.Text(16)}, nil
}

// writeTLSSecret creates the TLS Secret, or, when it exists, applies
// desired over it; made says it created it.
func (p *pass) writeTLSSecret(ctx context.Context, desired *corev1ac.SecretApplyConfiguration, exists bool) (*corev1.Secret, bool, error) {
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
		live, err := secrets.Get(ctx, secret.Name, metav1.GetOptions{})
		if err != nil {
			return nil, false, fmt.Errorf("reading Secret %s: %w", secret.Name, err)
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

// authority returns the Database's certificate authority, read from its
// Secret, or made and written there when it has none.
func (p *pass) authority(ctx context.Context, now time.Time) (certs.Issued, []string, error) {
	r, db := p.r, p.db
	name := names.AuthoritySecretName(db)
	secrets := r.kube.CoreV1().Secrets(db.Namespace)
	live, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil && !metav1.IsControlledBy(live, db):
		return certs.Issued{}, nil, conflict(db, "Secret", name)
	case err == nil:
		return certs.Issued{CertPEM: live.Data[builder.AuthorityKey], KeyPEM: live.Data[builder.AuthorityKeyKey]}, nil, nil
	case !apierrors.IsNotFound(err):
		return certs.Issued{}, nil, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	ca, err := certs.NewAuthority(rand.Reader, db.Namespace+"/"+db.Name+" database-controller authority", now, certs.AuthorityValidity)
	if err != nil {
		return certs.Issued{}, nil, fmt.Errorf("making the certificate authority: %w", err)
	}
	caCert, err := certs.Parse(ca.CertPEM)
	if err != nil {
		return certs.Issued{}, nil, err
	}
	var secret corev1.Secret
	if err := builder.Convert(builder.NewAuthoritySecret(db, ca.CertPEM, ca.KeyPEM, caCert.NotAfter), &secret); err != nil {
		return certs.Issued{}, nil, err
	}
	if _, err := secrets.Create(ctx, &secret, createOptions); err != nil {
		// One that exists was made by another pass or process: the next
		// pass reads it, and no certificate is signed by one that is lost.
		return certs.Issued{}, nil, fmt.Errorf("creating Secret %s: %w", name, err)
	}
	return ca, []string{"Secret " + name}, nil
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
	for k, into := range map[string]**metav1.Time{builder.AnnotationNotAfter: &st.NotAfter, builder.AnnotationRenewAt: &st.RenewAt,
		builder.AnnotationAuthorityNA: &st.AuthorityNotAfter} {
		if t, err := time.Parse(time.RFC3339, a[k]); err == nil {
			*into = &metav1.Time{Time: t}
		}
	}
	return st
}

// serverNamesDigest is the digest of the names db's server certificate
// covers.
func serverNamesDigest(db *dbv1alpha1.Database) string {
	return pemDigest([]byte(strings.Join(certs.ServerNames(names.ServiceName(db), names.ReadOnlyServiceName(db),
		names.HeadlessServiceName(db), db.Namespace, names.ClusterDomain), ",")))
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
	cached, err := p.read.secret(db.Namespace, name)
	if err != nil || !metav1.IsControlledBy(cached, db) || cached.Annotations[builder.AnnotationBundle] == t.bundle {
		// Missing or not ours: ensureSecret has said so, or created it with
		// the bundle, which the cache shows later.
		return nil
	}
	bundle := t.bundlePEM
	if bundle == nil {
		live, err := r.kube.CoreV1().Secrets(db.Namespace).Get(ctx, names.TLSSecretName(db), metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading the authorities of Secret %s: %w", names.TLSSecretName(db), err)
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
	if _, err := r.kube.CoreV1().Secrets(db.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("adding the authorities (ca.crt) to Secret %s: %w", name, err)
	}
	r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated,
		"Updated Secret %s: ca.crt holds the authorities that sign the servers' certificates, for clients that verify them; no other key changed", name)
	return nil
}

// writtenSecrets remembers the Secrets the TLS step last wrote until the
// cache shows them, so that a pass on a cache behind its write does not
// issue a certificate again.
type writtenSecrets struct {
	*ttlSet[ChildKey, *corev1.Secret]
}

// newest is written's Secret when the cache's is older, else cached.
func (w writtenSecrets) newest(key ChildKey, cached *corev1.Secret) *corev1.Secret {
	written, ok := w.get(key)
	if !ok {
		return cached
	}
	if c, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, written.ResourceVersion); err == nil && c < 0 {
		return written
	}
	w.remove(key)
	return cached
}

// authoritiesOf is what the controller verifies db's servers against: the
// credentials Secret's ca.crt, as clients do, while the servers have TLS
// (status.tls, or the TLS step's Secret when the status is yet to say);
// none otherwise, and the connections are in plain text.
func (p *pass) authoritiesOf(credentials *corev1.Secret) string {
	if p.db.Spec.TLSMode() == dbv1alpha1.TLSDisabled || p.plan.Engine == nil || p.plan.Engine.Runtime().TLS == nil {
		return ""
	}
	return string(credentials.Data[builder.AuthorityKey])
}

// CertificatePresenter connects to the server at host:port over TLS,
// verified against cred.Authorities, and returns the serial number of the
// certificate it presented; when that is not serial, it has the server
// read its files again and says it reloaded (pgsql.PresentCertificate).
type CertificatePresenter func(ctx context.Context, host string, port int32, cred ha.Credentials, serial string) (presented string, reloaded bool, err error)

// certificatePoll is how soon a server that reloaded is asked again which
// certificate it presents: the kubelet writes a Secret's change into the
// pods' volumes within about a minute, and the reload reads what is
// there when it runs.
const certificatePoll = 15 * time.Second

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
		if s, ok := r.presented.get(pod.UID); ok && s == t.serial {
			continue
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
			r.presented.put(pod.UID, t.serial)
		case reloaded:
			logger.V(2).Info("The server presented an earlier certificate: it reloaded", "pod", klog.KObj(pod), "presented", presented, "serial", t.serial)
			pollAfter = certificatePoll
		}
	}
	return pollAfter, nil
}

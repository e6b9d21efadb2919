package builder

import (
	"maps"
	"path"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/certs"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// The keys of the TLS Secrets, as cert-manager writes them, and the
// authority's key, which only the Secret <name>-ca holds.
const (
	TLSCertKey      = "tls.crt"
	TLSKeyKey       = "tls.key"
	AuthorityKey    = "ca.crt"
	AuthorityKeyKey = "ca.key"
)

// Annotations of the TLS Secrets: what the controller decides renewals
// and rotations from, since its cache holds no Secret data. The server
// Secret's say for which mode and names its certificate was issued, when
// it expires, when it is renewed, its serial number and its issuer's, the
// digest of its authorities' bundle (which the credentials Secret's
// ca.crt follows), the serial numbers of the authorities in that bundle,
// and since when the newest is in it. The authority's Secret's say when
// it expires, when it is replaced, and its serial number.
const (
	AnnotationTLSMode      = "dbcontroller.io/tls-mode"
	AnnotationTLSNames     = "dbcontroller.io/tls-names"
	AnnotationNotAfter     = "dbcontroller.io/not-after"
	AnnotationRenewAt      = "dbcontroller.io/renew-at"
	AnnotationSerial       = "dbcontroller.io/serial"
	AnnotationIssuer       = "dbcontroller.io/issuer"
	AnnotationBundle       = "dbcontroller.io/ca-bundle"
	AnnotationTrusts       = "dbcontroller.io/trusts"
	AnnotationTrustedSince = "dbcontroller.io/trusted-since"
	AnnotationAuthorityNA  = "dbcontroller.io/authority-not-after"
	// AnnotationSource says, of a certificate copied from the user's
	// Secret (spec.tls.secretName), which one and which version of it:
	// name/uid/resourceVersion; AnnotationSourceTrusts, the serial numbers
	// of the authorities of its ca.crt.
	AnnotationSource       = "dbcontroller.io/source"
	AnnotationSourceTrusts = "dbcontroller.io/source-trusts"
)

// AnnotationCertificateSerial, on a server's pod, is the serial number of
// the TLS Secret's certificate the controller last found the server not
// presenting. The controller sets it when it makes the server reload: a
// change of a pod makes the kubelet write the pod's Secrets into its
// volumes at once, where it otherwise does at its next sync of the pod,
// a minute or more later.
const AnnotationCertificateSerial = "dbcontroller.io/certificate-serial"

// tlsVolume is the pod volume of the Secret <name>-tls.
const tlsVolume = "tls"

// ServerCertificate is a server certificate as the TLS Secret holds it.
type ServerCertificate struct {
	CertPEM, KeyPEM, BundlePEM []byte
	// Mode is the spec.tls.mode it was issued for; Names, the digest of
	// the names it covers; Serial and Issuer, its serial number and its
	// authority's, in hex; Bundle, the digest of BundlePEM, and Trusts the
	// serial numbers of the authorities in it, trusted since TrustedSince.
	Mode, Names, Serial, Issuer, Bundle, Trusts string
	NotAfter, RenewAt, TrustedSince             time.Time
	AuthorityNotAfter                           time.Time
	// Source and SourceTrusts, of a certificate the user supplies
	// (AnnotationSource, AnnotationSourceTrusts); RenewAt is then zero:
	// its renewals are the user's.
	Source, SourceTrusts string
}

// Authority is a certificate authority as its Secret holds it.
type Authority struct {
	CertPEM, KeyPEM []byte
	// Serial is its serial number in hex.
	Serial            string
	NotAfter, RenewAt time.Time
}

// AuthorityOf is the Authority of the certificate authority ca: its PEM,
// and the serial number, expiry and time to renew read from its
// certificate.
func AuthorityOf(ca certs.Issued) (Authority, error) {
	cert, err := certs.Parse(ca.CertPEM)
	if err != nil {
		return Authority{}, err
	}
	return Authority{CertPEM: ca.CertPEM, KeyPEM: ca.KeyPEM, Serial: cert.SerialNumber.Text(16), NotAfter: cert.NotAfter, RenewAt: certs.RenewAt(cert)}, nil
}

// NewTLSSecret builds the Secret the servers read their certificate, key
// and authorities from, with the engine's own files for the mode.
func NewTLSSecret(db *dbv1alpha1.Database, e engine.Engine, c ServerCertificate) *corev1ac.SecretApplyConfiguration {
	data := map[string][]byte{TLSCertKey: c.CertPEM, TLSKeyKey: c.KeyPEM, AuthorityKey: c.BundlePEM}
	if t := e.Runtime().TLS; t != nil && t.Files != nil {
		for k, v := range t.Files(c.Mode) {
			data[k] = []byte(v)
		}
	}
	if t := e.Runtime().TLS; t != nil && t.KeyWithCertificate != "" {
		data[t.KeyWithCertificate] = append(append([]byte{}, c.KeyPEM...), c.CertPEM...)
	}
	annotations := map[string]string{
		AnnotationTLSMode:      c.Mode,
		AnnotationTLSNames:     c.Names,
		AnnotationSerial:       c.Serial,
		AnnotationIssuer:       c.Issuer,
		AnnotationBundle:       c.Bundle,
		AnnotationTrusts:       c.Trusts,
		AnnotationTrustedSince: c.TrustedSince.UTC().Format(time.RFC3339),
		AnnotationNotAfter:     c.NotAfter.UTC().Format(time.RFC3339),
		AnnotationAuthorityNA:  c.AuthorityNotAfter.UTC().Format(time.RFC3339),
	}
	if !c.RenewAt.IsZero() {
		annotations[AnnotationRenewAt] = c.RenewAt.UTC().Format(time.RFC3339)
	}
	if c.Source != "" {
		annotations[AnnotationSource], annotations[AnnotationSourceTrusts] = c.Source, c.SourceTrusts
	}
	return corev1ac.Secret(names.TLSSecretName(db), db.Namespace).
		WithLabels(names.Labels(db)).
		WithAnnotations(annotations).
		WithOwnerReferences(ownerReference(db)).
		WithType(corev1.SecretTypeTLS).
		WithData(data)
}

// NewAuthoritySecret builds the Secret of the Database's certificate
// authority. No pod mounts it: only the controller signs with its key.
func NewAuthoritySecret(db *dbv1alpha1.Database, a Authority) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(names.AuthoritySecretName(db), db.Namespace).
		WithLabels(names.Labels(db)).
		WithAnnotations(map[string]string{
			AnnotationSerial:   a.Serial,
			AnnotationNotAfter: a.NotAfter.UTC().Format(time.RFC3339),
			AnnotationRenewAt:  a.RenewAt.UTC().Format(time.RFC3339),
		}).
		WithOwnerReferences(ownerReference(db)).
		WithType(corev1.SecretTypeOpaque).
		WithData(map[string][]byte{AuthorityKey: a.CertPEM, AuthorityKeyKey: a.KeyPEM})
}

// WithTLS gives the server of sts the Secret <name>-tls, mounted at
// engine.TLSDir, and the arguments that turn TLS on; the replication's
// init container, the authorities and the environment to verify the
// primary with. The mode is the pod template's too, so that a change of
// it restarts the servers, in the order a rollout takes. The Secret's
// files are readable by the server's group (fsGroup), not by others:
// PostgreSQL refuses a key that others may read.
func WithTLS(sts *appsv1ac.StatefulSetApplyConfiguration, db *dbv1alpha1.Database, e engine.Engine, mode dbv1alpha1.TLSMode) {
	t := e.Runtime().TLS
	if t == nil || mode == dbv1alpha1.TLSDisabled {
		return
	}
	spec := sts.Spec.Template.Spec
	spec.WithVolumes(corev1ac.Volume().WithName(tlsVolume).WithSecret(
		corev1ac.SecretVolumeSource().WithSecretName(names.TLSSecretName(db)).WithDefaultMode(0o640)))
	mount := corev1ac.VolumeMount().WithName(tlsVolume).WithMountPath(engine.TLSDir).WithReadOnly(true)
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if *c.Name != e.Name() {
			continue
		}
		c.WithVolumeMounts(mount)
		withServerArgs(c, t.Server, t.ServerArgs(string(mode)))
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if *c.Name != ReplicationContainer {
			continue
		}
		c.WithVolumeMounts(mount)
		for _, k := range slices.Sorted(maps.Keys(t.ReplicationEnv)) {
			c.WithEnv(corev1ac.EnvVar().WithName(k).WithValue(t.ReplicationEnv[k]))
		}
	}
	sts.Spec.Template.WithAnnotations(map[string]string{AnnotationTLSMode: string(mode)})
}

// WithCertificateSerial has the pods of sts carry the serial number of
// their servers' certificate, for an engine whose servers take a new one
// only when they start (engine.TLS.RestartToRenew): a new certificate
// then rolls them out. It changes nothing for the others, or without a
// certificate.
func WithCertificateSerial(sts *appsv1ac.StatefulSetApplyConfiguration, e engine.Engine, serial string) {
	if t := e.Runtime().TLS; t == nil || !t.RestartToRenew || serial == "" {
		return
	}
	sts.Spec.Template.WithAnnotations(map[string]string{AnnotationSerial: serial})
}

// serverAuthoritiesVolume is a Job's volume of the credentials Secret's
// ca.crt.
const serverAuthoritiesVolume = "server-authorities"

// withServerVerification has the tool of a backup Job of db verify the
// server it reaches, when db's servers have TLS: the credentials Secret's
// ca.crt mounted at engine.ClientAuthorityFile, and the engine's
// ClientEnv. The key is optional, as a Secret made before TLS gets it a
// moment after the servers do: a tool that finds no file says so.
func withServerVerification(job *batchv1ac.JobApplyConfiguration, db *dbv1alpha1.Database, e engine.Engine) *batchv1ac.JobApplyConfiguration {
	return withVerification(job, db, e, JobBackup)
}

// withVerification is withServerVerification for the Job's container
// named container.
func withVerification(job *batchv1ac.JobApplyConfiguration, db *dbv1alpha1.Database, e engine.Engine, container string) *batchv1ac.JobApplyConfiguration {
	t := e.Runtime().TLS
	if t == nil || db.Spec.TLSMode() == dbv1alpha1.TLSDisabled {
		return job
	}
	spec := job.Spec.Template.Spec
	spec.WithVolumes(corev1ac.Volume().WithName(serverAuthoritiesVolume).WithSecret(corev1ac.SecretVolumeSource().
		WithSecretName(names.SecretName(db)).WithOptional(true).WithDefaultMode(0o444).
		WithItems(corev1ac.KeyToPath().WithKey(AuthorityKey).WithPath(path.Base(engine.ClientAuthorityFile)))))
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if *c.Name != container {
			continue
		}
		c.WithVolumeMounts(corev1ac.VolumeMount().WithName(serverAuthoritiesVolume).WithMountPath(path.Dir(engine.ClientAuthorityFile)).WithReadOnly(true))
		for _, k := range slices.Sorted(maps.Keys(t.ClientEnv)) {
			c.WithEnv(corev1ac.EnvVar().WithName(k).WithValue(t.ClientEnv[k]))
		}
	}
	return job
}

// Package certs issues the certificates of a Database's TLS with the
// standard library: a certificate authority of its own, and a server
// certificate it signs for the names clients reach the servers by. It
// decides when each is renewed, and keeps a bundle of the authorities a
// client trusts while one replaces another. Keys are ECDSA P-256, which
// PostgreSQL, MySQL, MariaDB and their clients all take. Nothing here
// reads the clock or talks to the API: the caller gives the time.
package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"time"
)

// Validity of what the controller issues: an authority for five years, a
// server certificate for 90 days (renewed with 30 left: RenewalDue).
const (
	AuthorityValidity = 5 * 365 * 24 * time.Hour
	ServerValidity    = 90 * 24 * time.Hour
)

// backdate is how far before now a certificate starts, so that a server
// whose clock is a little behind the controller's takes it.
const backdate = 5 * time.Minute

// Issued is a certificate and its private key, in PEM.
type Issued struct {
	CertPEM, KeyPEM []byte
}

// NewAuthority makes a self-signed certificate authority named name, valid
// for validity from now.
func NewAuthority(random io.Reader, name string, now time.Time, validity time.Duration) (Issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), random)
	if err != nil {
		return Issued{}, err
	}
	tmpl, err := template(random, name, now, validity)
	if err != nil {
		return Issued{}, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.MaxPathLenZero = true, true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(random, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return Issued{}, err
	}
	return encode(der, key)
}

// IssueServer makes a server certificate for dnsNames (the first is its
// common name), signed by the authority, valid for validity from now but
// never past the authority's own end.
func IssueServer(random io.Reader, authority Issued, dnsNames []string, now time.Time, validity time.Duration) (Issued, error) {
	if len(dnsNames) == 0 {
		return Issued{}, errors.New("a server certificate needs a name")
	}
	caCert, err := Parse(authority.CertPEM)
	if err != nil {
		return Issued{}, fmt.Errorf("the authority's certificate: %w", err)
	}
	caKey, err := parseKey(authority.KeyPEM)
	if err != nil {
		return Issued{}, fmt.Errorf("the authority's key: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), random)
	if err != nil {
		return Issued{}, err
	}
	tmpl, err := template(random, dnsNames[0], now, validity)
	if err != nil {
		return Issued{}, err
	}
	if tmpl.NotAfter.After(caCert.NotAfter) {
		tmpl.NotAfter = caCert.NotAfter
	}
	tmpl.DNSNames = slices.Clone(dnsNames)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	der, err := x509.CreateCertificate(random, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return Issued{}, err
	}
	return encode(der, key)
}

func template(random io.Reader, name string, now time.Time, validity time.Duration) (*x509.Certificate, error) {
	serial, err := randInt(random)
	if err != nil {
		return nil, err
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"database-controller"}},
		NotBefore:    now.Add(-backdate).UTC(),
		NotAfter:     now.Add(validity).UTC(),
	}, nil
}

// randInt is a positive serial number of 128 random bits.
func randInt(random io.Reader) (*big.Int, error) {
	b := make([]byte, 16)
	if _, err := io.ReadFull(random, b); err != nil {
		return nil, err
	}
	b[0] &= 0x7f
	n := new(big.Int).SetBytes(b)
	if n.Sign() == 0 {
		n.SetInt64(1)
	}
	return n, nil
}

func encode(der []byte, key *ecdsa.PrivateKey) (Issued, error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Issued{}, err
	}
	return Issued{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// Parse reads the first certificate of a PEM text.
func Parse(certPEM []byte) (*x509.Certificate, error) {
	certs, err := ParseAll(certPEM)
	if err != nil {
		return nil, err
	}
	return certs[0], nil
}

// ParseAll reads every certificate of a PEM text (a bundle), at least one.
func ParseAll(certPEM []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := certPEM; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no certificate in PEM")
	}
	return out, nil
}

func parseKey(keyPEM []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("no key in PEM")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T key, not ECDSA", key)
	}
	return ec, nil
}

// RenewAt is when cert is to be replaced: once a third of its life is
// left (30 days of a server certificate's 90, 20 months of an
// authority's five years), so that a controller that is down for a while
// still renews it in time.
func RenewAt(cert *x509.Certificate) time.Time {
	life := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotAfter.Add(-life / 3)
}

// RenewalDue reports whether cert is to be replaced at now.
func RenewalDue(cert *x509.Certificate, now time.Time) bool {
	return !now.Before(RenewAt(cert))
}

// Covers reports whether cert names exactly dnsNames, in any order: a
// server certificate of other names is issued again.
func Covers(cert *x509.Certificate, dnsNames []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(cert.DNSNames)), slices.Sorted(slices.Values(dnsNames)))
}

// Bundle is the PEM bundle of the authorities a client trusts: those of
// the given PEM texts, each once, but those expired at now, the newest
// last. While one authority replaces another, both are in it, so that a
// client that read the bundle before or after trusts the servers'
// certificates of either.
func Bundle(now time.Time, pems ...[]byte) []byte {
	var certs []*x509.Certificate
	for _, p := range pems {
		all, err := ParseAll(p)
		if err != nil {
			continue
		}
		for _, c := range all {
			if now.After(c.NotAfter) || slices.ContainsFunc(certs, func(o *x509.Certificate) bool { return bytes.Equal(o.Raw, c.Raw) }) {
				continue
			}
			certs = append(certs, c)
		}
	}
	slices.SortStableFunc(certs, func(a, b *x509.Certificate) int { return a.NotBefore.Compare(b.NotBefore) })
	var out []byte
	for _, c := range certs {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return out
}

// Verify checks that certPEM is a server certificate for name, valid at
// now, signed by an authority of bundlePEM: what a client that verifies
// fully (PostgreSQL's sslmode=verify-full, MySQL's VERIFY_IDENTITY)
// checks.
func Verify(certPEM, bundlePEM []byte, name string, now time.Time) error {
	cert, err := Parse(certPEM)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundlePEM) {
		return errors.New("no authority in the bundle")
	}
	_, err = cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

// ServerNames are the names a Database's server certificate covers: its
// client Service, its read-only Service, and every pod through its
// headless Service (a wildcard: pods added later are covered), each in
// its short, namespaced and cluster-domain forms.
func ServerNames(service, readOnly, headless, namespace, clusterDomain string) []string {
	forms := func(host string) []string {
		return []string{host, host + "." + namespace, host + "." + namespace + ".svc", host + "." + namespace + ".svc." + clusterDomain}
	}
	names := append(forms(service), forms(readOnly)...)
	return append(names, forms("*."+headless)...)
}

// Supplied is a server certificate a user gives (a Secret of the shape
// cert-manager writes), once CheckSupplied found it fit to serve.
type Supplied struct {
	// Leaf is the server's certificate, the first of tls.crt.
	Leaf *x509.Certificate
	// Issuer is the certificate that signed it: an intermediate of tls.crt
	// or an authority of ca.crt.
	Issuer *x509.Certificate
}

// CheckSupplied checks a server certificate a user gives: chainPEM (the
// server's certificate first, then any intermediates), its key keyPEM
// (any type crypto/tls takes), and the authorities bundlePEM that sign
// it, at now. It must be valid for server authentication at every name of
// names, through the authorities alone, and keyPEM must be its key. The
// error says, in words a person can act on, what is wrong first.
func CheckSupplied(chainPEM, keyPEM, bundlePEM []byte, names []string, now time.Time) (Supplied, error) {
	chain, err := ParseAll(chainPEM)
	if err != nil {
		return Supplied{}, fmt.Errorf("tls.crt: %w", err)
	}
	if _, err := tls.X509KeyPair(chainPEM, keyPEM); err != nil {
		return Supplied{}, fmt.Errorf("tls.key is not the key of tls.crt's certificate: %w", err)
	}
	roots := x509.NewCertPool()
	if len(bundlePEM) == 0 || !roots.AppendCertsFromPEM(bundlePEM) {
		return Supplied{}, errors.New("ca.crt holds no certificate: it must hold the authorities that sign tls.crt, which clients verify the servers against")
	}
	intermediates := x509.NewCertPool()
	for _, c := range chain[1:] {
		intermediates.AddCert(c)
	}
	var issuer *x509.Certificate
	for _, name := range names {
		chains, err := chain[0].Verify(x509.VerifyOptions{DNSName: name, Roots: roots, Intermediates: intermediates, CurrentTime: now,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if err != nil {
			return Supplied{}, fmt.Errorf("tls.crt does not serve %s through ca.crt's authorities: %w", name, err)
		}
		if len(chains[0]) > 1 {
			issuer = chains[0][1]
		} else {
			issuer = chains[0][0]
		}
	}
	return Supplied{Leaf: chain[0], Issuer: issuer}, nil
}

// Encode is the PEM text of c.
func Encode(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

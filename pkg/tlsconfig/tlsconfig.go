// Package tlsconfig is how the controller's own connections to a
// Database's servers verify them: against the Database's authorities,
// whatever address they are dialled at.
package tlsconfig

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// Compact is the authorities of a ca.crt (PEM) as the controller keeps
// them, once per version of a Database's credentials: the DER of each
// certificate that ForAuthorities would trust, one after the other, which
// is about two thirds of their text (no base64, no armour). A ca.crt that
// holds no such certificate is kept as it is, for ForAuthorities to
// refuse; "" stays "".
func Compact(authorities []byte) string {
	var der []byte
	for rest := authorities; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" || len(block.Headers) != 0 {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err == nil {
			der = append(der, block.Bytes...)
		}
	}
	if der == nil {
		return string(authorities)
	}
	return string(der)
}

// authorityPool is a pool of authorities, given as Compact gives them (DER) or as
// a ca.crt holds them (PEM); false when they hold no certificate.
func authorityPool(authorities []byte) (*x509.CertPool, bool) {
	pool := x509.NewCertPool()
	if bytes.Contains(authorities, []byte("-----BEGIN")) {
		return pool, pool.AppendCertsFromPEM(authorities)
	}
	certs, err := x509.ParseCertificates(authorities)
	if err != nil || len(certs) == 0 {
		return nil, false
	}
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, true
}

// ForAuthorities is a TLS client configuration that trusts a server whose
// certificate chains to one of the authorities (DER, as Compact gives
// them, or PEM) and is for server
// authentication, at any name: the controller dials pods at their
// addresses, which no certificate names, and the authorities are the
// Database's own, which sign only its servers' certificates (PostgreSQL's
// sslmode=verify-ca). It is TLS 1.2 at least. seen, when not nil, is
// given the server's certificate once it is verified.
func ForAuthorities(authorities []byte, seen func(leaf *x509.Certificate)) (*tls.Config, error) {
	roots, ok := authorityPool(authorities)
	if !ok {
		return nil, errors.New("the Secret's ca.crt holds no certificate")
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The name is not checked; VerifyConnection checks the chain.
		InsecureSkipVerify: true, //nolint:gosec // verified below, against the Database's own authorities
		VerifyConnection: func(cs tls.ConnectionState) error {
			if err := verify(cs.PeerCertificates, roots); err != nil {
				return err
			}
			if seen != nil {
				seen(cs.PeerCertificates[0])
			}
			return nil
		},
	}, nil
}

// verify checks that the peer's chain leads to roots, for server
// authentication.
func verify(peer []*x509.Certificate, roots *x509.CertPool) error {
	if len(peer) == 0 {
		return errors.New("the server presented no certificate")
	}
	intermediates := x509.NewCertPool()
	for _, c := range peer[1:] {
		intermediates.AddCert(c)
	}
	if _, err := peer[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("the server's certificate is not one of the Database's authorities': %w", err)
	}
	return nil
}

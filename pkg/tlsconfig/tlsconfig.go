// Package tlsconfig is how the controller's own connections to a
// Database's servers verify them: against the Database's authorities,
// whatever address they are dialled at.
package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// ForAuthorities is a TLS client configuration that trusts a server whose
// certificate chains to one of the authorities (PEM) and is for server
// authentication, at any name: the controller dials pods at their
// addresses, which no certificate names, and the authorities are the
// Database's own, which sign only its servers' certificates (PostgreSQL's
// sslmode=verify-ca). It is TLS 1.2 at least. seen, when not nil, is
// given the server's certificate once it is verified.
func ForAuthorities(authorities []byte, seen func(leaf *x509.Certificate)) (*tls.Config, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(authorities) {
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

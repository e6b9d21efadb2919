package tlsconfig

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbcontroller/database-controller/pkg/certs"
)

// handshake runs a TLS handshake of a client with cfg against a server
// presenting server, over loopback TCP, and returns the client's error.
func handshake(t *testing.T, cfg *tls.Config, server certs.Issued) error {
	t.Helper()
	pair, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	// Loopback TCP, whose buffers let both ends write at once, as a
	// refusing client and a server do.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		s, err := ln.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		_ = tls.Server(s, &tls.Config{Certificates: []tls.Certificate{pair}}).Handshake()
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return tls.Client(c, cfg).Handshake()
}

// authorities are two authorities, ours and theirs, and issue, which
// issues a server's certificate of one of them.
func authorities(t *testing.T, now time.Time) (ours, theirs certs.Issued, issue func(ca certs.Issued) certs.Issued) {
	t.Helper()
	issue = func(ca certs.Issued) certs.Issued {
		s, err := certs.IssueServer(rand.Reader, ca, []string{"orders.default.svc"}, now, certs.ServerValidity)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ours, err := certs.NewAuthority(rand.Reader, "ours", now, certs.AuthorityValidity)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err = certs.NewAuthority(rand.Reader, "theirs", now, certs.AuthorityValidity)
	if err != nil {
		t.Fatal(err)
	}
	return ours, theirs, issue
}

func TestForAuthorities(t *testing.T) {
	now := time.Now()
	ours, theirs, issue := authorities(t, now)
	server := issue(ours)
	var seen string
	cfg, err := ForAuthorities(certs.Bundle(now, theirs.CertPEM, ours.CertPEM), func(leaf *x509.Certificate) { seen = leaf.SerialNumber.Text(16) })
	if err != nil {
		t.Fatal(err)
	}
	// Dialled at an address no certificate names: the chain is what counts.
	if err := handshake(t, cfg, server); err != nil {
		t.Errorf("a server of the Database's authority: %v, want it trusted at any name", err)
	}
	leaf, _ := certs.Parse(server.CertPEM)
	if seen != leaf.SerialNumber.Text(16) {
		t.Errorf("seen %q, want the presented certificate's serial %s", seen, leaf.SerialNumber.Text(16))
	}
	only, err := ForAuthorities(ours.CertPEM, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, only, issue(theirs)); err == nil || !strings.Contains(err.Error(), "not one of the Database's authorities") {
		t.Errorf("a server of another authority: %v, want it refused", err)
	}
	if _, err := ForAuthorities([]byte("no PEM here"), nil); err == nil {
		t.Error("a ca.crt of no certificate gave a configuration")
	}
}

// The authorities kept compact are the ca.crt's certificates, and trust
// the servers the ca.crt does, and no other.
func TestCompact(t *testing.T) {
	now := time.Now()
	ours, theirs, issue := authorities(t, now)
	stranger, _, _ := authorities(t, now)
	key := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("not a certificate")})
	caCRT := slices.Concat(certs.Bundle(now, theirs.CertPEM, ours.CertPEM), key)
	compact := Compact(caCRT)
	if len(compact) >= len(caCRT)*3/4 {
		t.Errorf("compact: %d bytes of a ca.crt of %d", len(compact), len(caCRT))
	}
	cfg, err := ForAuthorities([]byte(compact), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ca := range []certs.Issued{ours, theirs} {
		if err := handshake(t, cfg, issue(ca)); err != nil {
			t.Errorf("a server of an authority of the ca.crt: %v, want it trusted", err)
		}
	}
	if err := handshake(t, cfg, issue(stranger)); err == nil || !strings.Contains(err.Error(), "not one of the Database's authorities") {
		t.Errorf("a server of another authority: %v, want it refused", err)
	}
	for _, text := range []string{"", "no PEM here", string(key)} {
		if got := Compact([]byte(text)); got != text {
			t.Errorf("Compact(%q) = %q, want it as it was", text, got)
		}
		if _, err := ForAuthorities([]byte(Compact([]byte(text))), nil); err == nil {
			t.Errorf("a ca.crt of no certificate (%q) gave a configuration", text)
		}
	}
}

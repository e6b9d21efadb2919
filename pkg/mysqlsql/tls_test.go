package mysqlsql

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dbcontroller/database-controller/pkg/certs"
)

// TestWithTLS checks what the controller's connections let through: a
// server of the Database's authorities, verified and seen; the
// certificate a MySQL server makes itself, until its pod restarts with
// the Database's, let through and not seen; anyone else's, refused.
func TestWithTLS(t *testing.T) {
	now := time.Now()
	server := func(authority string) *x509.Certificate {
		t.Helper()
		ca, err := certs.NewAuthority(rand.Reader, authority, now, certs.AuthorityValidity)
		if err != nil {
			t.Fatal(err)
		}
		s, err := certs.IssueServer(rand.Reader, ca, []string{"orders.default.svc"}, now, certs.ServerValidity)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := certs.Parse(s.CertPEM)
		if err != nil {
			t.Fatal(err)
		}
		return leaf
	}
	ours, err := certs.NewAuthority(rand.Reader, "orders", now, certs.AuthorityValidity)
	if err != nil {
		t.Fatal(err)
	}
	issued, err := certs.IssueServer(rand.Reader, ours, []string{"orders.default.svc"}, now, certs.ServerValidity)
	if err != nil {
		t.Fatal(err)
	}
	ourLeaf, _ := certs.Parse(issued.CertPEM)

	cfg := mysql.NewConfig()
	if err := withTLS(cfg, "", nil); err != nil || cfg.TLS != nil {
		t.Fatalf("without authorities: TLS %v, err %v; want the configuration as it was", cfg.TLS, err)
	}
	var seen []string
	if err := withTLS(cfg, string(ours.CertPEM), func(c *x509.Certificate) { seen = append(seen, c.SerialNumber.Text(16)) }); err != nil {
		t.Fatal(err)
	}
	if !cfg.AllowFallbackToPlaintext {
		t.Error("a server with no TLS at all (its pod yet to restart with it) is not reached in plain text")
	}
	for _, tc := range []struct {
		name    string
		leaf    *x509.Certificate
		trusted bool
	}{
		{"the Database's", ourLeaf, true},
		{"MySQL's own", server("MySQL_Server_9.7.0_Auto_Generated_CA_Certificate"), true},
		{"another authority's", server("orders"), false},
		{"an authority named like MySQL's, with more", server("MySQL_Server_9.7.0_Auto_Generated_CA_Certificate evil"), false},
	} {
		err := cfg.TLS.VerifyConnection(tls.ConnectionState{PeerCertificates: []*x509.Certificate{tc.leaf}})
		if (err == nil) != tc.trusted {
			t.Errorf("%s certificate: err %v, want trusted %v", tc.name, err, tc.trusted)
		}
	}
	if len(seen) != 1 || seen[0] != ourLeaf.SerialNumber.Text(16) {
		t.Errorf("seen %q, want only the Database's certificate %s", seen, ourLeaf.SerialNumber.Text(16))
	}
}

package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"slices"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func authority(t *testing.T, name string, at time.Time) Issued {
	t.Helper()
	ca, err := NewAuthority(rand.Reader, name, at, AuthorityValidity)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func server(t *testing.T, ca Issued, at time.Time, validity time.Duration) Issued {
	t.Helper()
	s, err := IssueServer(rand.Reader, ca, ServerNames("orders", "orders-ro", "orders-headless", "shop", "cluster.local"), at, validity)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestServerNames(t *testing.T) {
	want := []string{
		"orders", "orders.shop", "orders.shop.svc", "orders.shop.svc.cluster.local",
		"orders-ro", "orders-ro.shop", "orders-ro.shop.svc", "orders-ro.shop.svc.cluster.local",
		"*.orders-headless", "*.orders-headless.shop", "*.orders-headless.shop.svc", "*.orders-headless.shop.svc.cluster.local",
	}
	if got := ServerNames("orders", "orders-ro", "orders-headless", "shop", "cluster.local"); !slices.Equal(got, want) {
		t.Errorf("names\n%q\nwant\n%q", got, want)
	}
}

// A client that verifies fully reaches the servers by every name it may
// use, and by no other.
func TestServerCertificateNames(t *testing.T) {
	ca := authority(t, "orders-ca", now)
	s := server(t, ca, now, ServerValidity)
	for name, ok := range map[string]bool{
		"orders": true, "orders.shop.svc": true, "orders.shop.svc.cluster.local": true, "orders-ro.shop": true,
		"orders-0.orders-headless.shop.svc": true, "orders-7.orders-headless.shop.svc.cluster.local": true, "orders-1.orders-headless": true,
		"orders.other": false, "payments.shop.svc": false, "a.orders-0.orders-headless.shop.svc": false, "orders-headless.shop.svc": false,
		"10.0.0.1": false,
	} {
		err := Verify(s.CertPEM, ca.CertPEM, name, now)
		if (err == nil) != ok {
			t.Errorf("verified for %s: %v, want %v (%v)", name, err == nil, ok, err)
		}
	}
	if err := Verify(s.CertPEM, authority(t, "other-ca", now).CertPEM, "orders", now); err == nil {
		t.Error("verified against another authority")
	}
	if err := Verify(s.CertPEM, ca.CertPEM, "orders", now.Add(ServerValidity+time.Minute)); err == nil {
		t.Error("verified after it expired")
	}
}

// What the servers load: the certificate and its key make a pair, the
// key is ECDSA P-256, and the authority signs only leaves.
func TestIssuedForms(t *testing.T) {
	ca := authority(t, "orders-ca", now)
	s := server(t, ca, now, ServerValidity)
	if _, err := tls.X509KeyPair(s.CertPEM, s.KeyPEM); err != nil {
		t.Fatalf("server certificate and key: %v", err)
	}
	key, err := parseKey(s.KeyPEM)
	if err != nil || key.Curve != elliptic.P256() {
		t.Fatalf("server key: %v, %v", key, err)
	}
	c, _ := Parse(ca.CertPEM)
	if !c.IsCA || c.MaxPathLen != 0 || !c.MaxPathLenZero || c.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("authority: IsCA %v, MaxPathLen %d, key usage %v", c.IsCA, c.MaxPathLen, c.KeyUsage)
	}
	leaf, _ := Parse(s.CertPEM)
	if leaf.IsCA || !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) || leaf.Subject.CommonName != "orders" {
		t.Errorf("server certificate: IsCA %v, ext key usage %v, common name %s", leaf.IsCA, leaf.ExtKeyUsage, leaf.Subject.CommonName)
	}
	if !leaf.NotBefore.Equal(now.Add(-backdate)) || !leaf.NotAfter.Equal(now.Add(ServerValidity)) {
		t.Errorf("server certificate valid %s to %s", leaf.NotBefore, leaf.NotAfter)
	}
	if !Covers(leaf, ServerNames("orders", "orders-ro", "orders-headless", "shop", "cluster.local")) || Covers(leaf, []string{"orders"}) {
		t.Error("Covers does not say whether the names are exactly the certificate's")
	}
	if _, err := IssueServer(rand.Reader, ca, nil, now, ServerValidity); err == nil {
		t.Error("a server certificate with no name")
	}
}

// A server certificate never outlives the authority that signed it.
func TestServerCertificateEndsWithItsAuthority(t *testing.T) {
	ca := authority(t, "orders-ca", now.Add(-AuthorityValidity+10*24*time.Hour))
	s := server(t, ca, now, ServerValidity)
	leaf, _ := Parse(s.CertPEM)
	caCert, _ := Parse(ca.CertPEM)
	if !leaf.NotAfter.Equal(caCert.NotAfter) {
		t.Errorf("server certificate ends %s, its authority %s", leaf.NotAfter, caCert.NotAfter)
	}
}

func TestRenewal(t *testing.T) {
	ca := authority(t, "orders-ca", now)
	caCert, _ := Parse(ca.CertPEM)
	leaf, _ := Parse(server(t, ca, now, ServerValidity).CertPEM)
	for _, tt := range []struct {
		name string
		cert *x509.Certificate
		at   time.Time
		due  bool
	}{
		{"server, new", leaf, now, false},
		{"server, a minute before a third of its life is left", leaf, RenewAt(leaf).Add(-time.Minute), false},
		{"server, a third of its life left", leaf, leaf.NotAfter.Add(-(ServerValidity + backdate) / 3), true},
		{"server, 59 days old", leaf, now.Add(59 * 24 * time.Hour), false},
		{"server, 61 days old", leaf, now.Add(61 * 24 * time.Hour), true},
		{"server, expired", leaf, now.Add(ServerValidity + time.Hour), true},
		{"authority, three years old", caCert, now.Add(3 * 365 * 24 * time.Hour), false},
		{"authority, 41 months old", caCert, now.Add(41 * 30 * 24 * time.Hour), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := RenewalDue(tt.cert, tt.at); got != tt.due {
				t.Errorf("RenewalDue at %s = %v, want %v (renew at %s)", tt.at, got, tt.due, RenewAt(tt.cert))
			}
		})
	}
}

// While a new authority replaces the old one, the bundle holds both:
// certificates of either verify, before and after the servers' is
// issued again. An expired authority and a repeated one leave it.
func TestBundleAcrossARotation(t *testing.T) {
	old := authority(t, "orders-ca", now.Add(-4*365*24*time.Hour))
	fresh := authority(t, "orders-ca", now)
	bundle := Bundle(now, old.CertPEM, fresh.CertPEM, old.CertPEM)
	certs, err := ParseAll(bundle)
	if err != nil || len(certs) != 2 {
		t.Fatalf("bundle of %d authorities (%v), want 2", len(certs), err)
	}
	if !bytes.Equal(certs[1].Raw, mustParse(t, fresh.CertPEM).Raw) {
		t.Error("the newest authority is not last")
	}
	for name, s := range map[string]Issued{"the old authority's": server(t, old, now, ServerValidity), "the new one's": server(t, fresh, now, ServerValidity)} {
		if err := Verify(s.CertPEM, bundle, "orders.shop.svc", now); err != nil {
			t.Errorf("%s server certificate does not verify against the bundle: %v", name, err)
		}
	}
	later := now.Add(2 * 365 * 24 * time.Hour)
	if certs, _ := ParseAll(Bundle(later, old.CertPEM, fresh.CertPEM)); len(certs) != 1 || !bytes.Equal(certs[0].Raw, mustParse(t, fresh.CertPEM).Raw) {
		t.Errorf("once the old authority expired the bundle holds %d authorities, want the new one only", len(certs))
	}
	if got := Bundle(now, []byte("not PEM")); len(got) != 0 {
		t.Errorf("bundle of nothing: %q", got)
	}
}

func mustParse(t *testing.T, p []byte) *x509.Certificate {
	t.Helper()
	c, err := Parse(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// intermediate is an authority that root signs (root made here, as
// NewAuthority's sign no authority below them).
func intermediate(t *testing.T) (root, mid Issued) {
	t.Helper()
	mk := func(name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (Issued, *x509.Certificate, *ecdsa.PrivateKey) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := template(rand.Reader, name, now, AuthorityValidity)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		issued, err := encode(der, key)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return issued, c, key
	}
	root, rootCert, rootKey := mk("root", nil, nil)
	mid, _, _ = mk("intermediate", rootCert, rootKey)
	return root, mid
}

func TestCheckSupplied(t *testing.T) {
	names := []string{"orders.shop.svc", "orders-ro.shop.svc", "orders-0.orders-headless.shop.svc"}
	ca := authority(t, "theirs", now)
	good := server(t, ca, now, ServerValidity)
	other := authority(t, "another", now)
	root, mid := intermediate(t)
	viaMid := server(t, mid, now, ServerValidity)
	narrow, err := IssueServer(rand.Reader, ca, []string{"orders.shop.svc"}, now, ServerValidity)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name               string
		chain, key, bundle []byte
		at                 time.Time
		want               string // "" for fit; else a part of the error
		wantIssuer         *Issued
	}{
		{"fit", good.CertPEM, good.KeyPEM, ca.CertPEM, now, "", &ca},
		{"through an intermediate in tls.crt", append(slices.Clone(viaMid.CertPEM), mid.CertPEM...), viaMid.KeyPEM, root.CertPEM, now, "", &mid},
		{"the intermediate missing", viaMid.CertPEM, viaMid.KeyPEM, root.CertPEM, now, "does not serve orders.shop.svc", nil},
		{"another certificate's key", good.CertPEM, viaMid.KeyPEM, ca.CertPEM, now, "tls.key is not the key of tls.crt", nil},
		{"no ca.crt", good.CertPEM, good.KeyPEM, nil, now, "ca.crt holds no certificate", nil},
		{"another authority", good.CertPEM, good.KeyPEM, other.CertPEM, now, "does not serve orders.shop.svc", nil},
		{"a name missing", narrow.CertPEM, narrow.KeyPEM, ca.CertPEM, now, "does not serve orders-ro.shop.svc", nil},
		{"expired", good.CertPEM, good.KeyPEM, ca.CertPEM, now.Add(ServerValidity + time.Hour), "expired", nil},
		{"no certificate", []byte("garbage"), good.KeyPEM, ca.CertPEM, now, "tls.crt", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := CheckSupplied(tc.chain, tc.key, tc.bundle, names, tc.at)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want one that says %q", err, tc.want)
			case tc.wantIssuer != nil:
				leaf, _ := Parse(tc.chain)
				issuer, _ := Parse(tc.wantIssuer.CertPEM)
				if s.Leaf.SerialNumber.Cmp(leaf.SerialNumber) != 0 || s.Issuer.SerialNumber.Cmp(issuer.SerialNumber) != 0 {
					t.Errorf("leaf %s issuer %s, want %s and %s", s.Leaf.SerialNumber, s.Issuer.SerialNumber, leaf.SerialNumber, issuer.SerialNumber)
				}
			}
		})
	}
}

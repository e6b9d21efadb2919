package mysqlsql

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/dbcontroller/database-controller/pkg/ha"
	"github.com/dbcontroller/database-controller/pkg/tlsconfig"
)

// mysqlOwnIssuer is the issuer of the certificate a MySQL server makes
// itself at its first start, and presents while it is given none
// (MySQL_Server_<version>_Auto_Generated_CA_Certificate).
var mysqlOwnIssuer = regexp.MustCompile(`^MySQL_Server_.*_Auto_Generated_CA_Certificate$`)

// withTLS has cfg connect over TLS that verifies the server against
// authorities (the credentials Secret's ca.crt): the chain and server
// authentication, not the name, as pods are dialled at their addresses
// (tlsconfig.ForAuthorities); seen, when not nil, is given the
// certificate of a server so verified. Without authorities, cfg is left
// as it is.
//
// A server whose pod is still to restart with the Database's certificate
// is reached as before TLS: in plain text when it has no TLS at all
// (MariaDB's default), and over TLS that is not verified when it presents
// the certificate MySQL makes itself (mysqlOwnIssuer). Any other
// certificate is refused.
func withTLS(cfg *mysql.Config, authorities string, seen func(*x509.Certificate)) error {
	if authorities == "" {
		return nil
	}
	tlsConfig, err := tlsconfig.ForAuthorities([]byte(authorities), seen)
	if err != nil {
		return err
	}
	verify := tlsConfig.VerifyConnection
	tlsConfig.VerifyConnection = func(cs tls.ConnectionState) error {
		err := verify(cs)
		if err != nil && len(cs.PeerCertificates) > 0 && mysqlOwnIssuer.MatchString(cs.PeerCertificates[0].Issuer.CommonName) {
			return nil
		}
		return err
	}
	cfg.TLS = tlsConfig
	cfg.AllowFallbackToPlaintext = true
	return nil
}

// PresentCertificate connects to the server at host:port over TLS,
// verified against cred.Authorities, and returns the serial number (in
// hex) of the certificate it presented. When that is not serial, it has
// the server read its certificate files again (MySQL's ALTER INSTANCE
// RELOAD TLS, MariaDB's FLUSH SSL) and says it reloaded: the server
// presents what its files hold to the connections after that. A server
// that presents no certificate of the Database's authorities has no TLS
// of the controller's yet (its pod is to restart with it): an error, as
// a reload would read no file of the controller's.
func PresentCertificate(ctx context.Context, host string, port int32, cred ha.Credentials, serial string) (presented string, reloaded bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	c, presented, err := connectSeeing(ctx, host, port, cred)
	if err != nil {
		return "", false, err
	}
	defer c.Close()
	if presented == serial {
		return presented, false, nil
	}
	rows, err := c.Query(ctx, "SELECT VERSION() AS version")
	if err != nil {
		return presented, false, err
	}
	reload := "ALTER INSTANCE RELOAD TLS"
	if len(rows) == 1 && strings.Contains(rows[0]["version"], "MariaDB") {
		reload = "FLUSH SSL"
	}
	if err := c.Exec(ctx, reload); err != nil {
		return presented, false, fmt.Errorf("reloading the server's certificate (%s): %w", reload, err)
	}
	return presented, true, nil
}

// Presented returns the serial number (hex) of the certificate the server
// at host:port presents, verified against cred.Authorities.
func Presented(ctx context.Context, host string, port int32, cred ha.Credentials) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	c, presented, err := connectSeeing(ctx, host, port, cred)
	if err != nil {
		return "", err
	}
	return presented, c.Close()
}

// errNotOurs is connectSeeing's error for a server that presented no
// certificate of the Database's authorities.
var errNotOurs = errors.New("the server presents no certificate of the Database's authorities yet (its pod is to restart with TLS)")

// connectSeeing connects with cred, verifying against cred.Authorities,
// and returns the serial number of the certificate the server presented.
func connectSeeing(ctx context.Context, host string, port int32, cred ha.Credentials) (conn, string, error) {
	if cred.Authorities == "" {
		return nil, "", errors.New("no authorities to verify the server against")
	}
	var presented string
	c, err := dialSeeing(ctx, host, port, cred, func(leaf *x509.Certificate) { presented = leaf.SerialNumber.Text(16) })
	if err != nil {
		return nil, "", err
	}
	if presented == "" {
		c.Close()
		return nil, "", errNotOurs
	}
	return c, presented, nil
}

// Package mysqlsql is how the controller talks SQL to the servers of a
// mysql Database, MySQL's or MariaDB's: a login with the credentials of
// its Secret (Login, for package login), and for a replicated Database
// the ha.Client of MySQL's GTID replication (New). One connection per
// call, none kept between calls.
package mysqlsql

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dbcontroller/database-controller/pkg/login"
	"github.com/dbcontroller/database-controller/pkg/podnet"
)

// accessDenied is the error number of a refused user or password
// (ER_ACCESS_DENIED_ERROR), the same in MySQL and MariaDB.
const accessDenied = 1045

// Timeout bounds each call: a server that does not answer within it counts
// as not answering.
const Timeout = 3 * time.Second

// config is the driver's configuration for user to log in to the server
// at host:port, into database ("" for none): over TLS verified against
// authorities when there are any (withTLS), seen given the certificate.
func config(host string, port int32, user, password, database, authorities string, seen func(*x509.Certificate)) (*mysql.Config, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.DBName = user, password, database
	cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(host, strconv.Itoa(int(port)))
	cfg.Timeout = Timeout
	// Directly, or through the API server (the controller's --server-access).
	cfg.DialFunc = podnet.DialContext
	// The errors come back to the caller: the driver's own log of them
	// would go to stderr, past klog.
	cfg.Logger = &mysql.NopLogger{}
	return cfg, withTLS(cfg, authorities, seen)
}

// Login logs in to the server at host:port into cred's database, as a
// client of the Database's Secret does, and logs out (login.Func).
func Login(ctx context.Context, host string, port int32, cred login.Credentials) error {
	cfg, err := config(host, port, cred.User, cred.Password, cred.Database, cred.Authorities, nil)
	if err != nil {
		return err
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	c, err := connector.Connect(ctx)
	if err != nil {
		return refusal(err)
	}
	return c.Close()
}

// refusal is a *login.RefusedError when err is the server's refusal of the
// user or password, else err.
func refusal(err error) error {
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) && myErr.Number == accessDenied {
		return &login.RefusedError{Message: myErr.Message}
	}
	return err
}

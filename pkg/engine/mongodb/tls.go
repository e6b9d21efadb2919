package mongodb

import "github.com/dbcontroller/database-controller/pkg/engine"

// tlsAuthorityEnv names, in a Job's mongosh or mongodump, the authorities
// to verify the server against: set only when the Database's servers have
// TLS.
const tlsAuthorityEnv = "DBC_TLS_CA"

// keyWithCertificate is mongod's tlsCertificateKeyFile: the key and the
// certificate in one file of the TLS Secret.
const keyWithCertificate = "mongodb.pem"

// tls turns on mongod's TLS with the controller's certificate: preferTLS
// under Enabled (plain text still served), requireTLS under Required;
// clients need no certificate of their own. mongod reads the files at
// start, and rotateCertificates needs a MongoDB client the controller does
// not have: a new certificate restarts the servers (RestartToRenew).
// Written from MongoDB's documentation and the image's entrypoint (which
// starts its temporary first-init server with tlsMode allowTLS): no mongod
// runs on this project's machines to prove it.
var tls = engine.TLS{
	ServerArgs: func(mode string) []string {
		tlsMode := "preferTLS"
		if mode == "Required" {
			tlsMode = "requireTLS"
		}
		return []string{
			"--tlsMode", tlsMode,
			"--tlsCertificateKeyFile", engine.TLSDir + "/" + keyWithCertificate,
			"--tlsCAFile", engine.TLSAuthorityFile,
			"--tlsAllowConnectionsWithoutCertificates",
		}
	},
	ClientEnv:          map[string]string{tlsAuthorityEnv: engine.ClientAuthorityFile},
	KeyWithCertificate: keyWithCertificate,
	RestartToRenew:     true,
}

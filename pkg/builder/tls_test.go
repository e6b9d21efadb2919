package builder

import (
	"crypto/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/certs"
)

// TestTLSGolden renders replicated PostgreSQL's and MySQL's StatefulSets
// with TLS (the Secret's volume, the server's arguments, the replication
// init container's verification) and the TLS Secret of Required, with
// placeholders for the PEM texts, which are random.
func TestTLSGolden(t *testing.T) {
	db := newDatabase(dbv1alpha1.EnginePostgreSQL, "16")
	db.Spec.Replicas = ptr.To[int32](3)
	e := lookup(t, db.Spec.Engine)
	sts := NewStatefulSet(db, e, "postgres:16", StorageOf(db), nil, true)
	WithTLS(sts, db, e, dbv1alpha1.TLSEnabled)
	WithParameters(sts, e, map[string]string{"max_connections": "200"})
	my := newDatabase(dbv1alpha1.EngineMySQL, "8.4")
	my.Spec.Replicas = ptr.To[int32](3)
	myEngine := lookup(t, my.Spec.Engine)
	mySts := NewStatefulSet(my, myEngine, "mysql:8.4", StorageOf(my), nil, true)
	WithTLS(mySts, my, myEngine, dbv1alpha1.TLSRequired)
	at := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	secret := NewTLSSecret(db, e, ServerCertificate{
		CertPEM: []byte("<server certificate>"), KeyPEM: []byte("<server key>"), BundlePEM: []byte("<authorities>"),
		Mode: "Required", Names: "0123456789abcdef", Serial: "1f", Issuer: "2e", Bundle: "fedcba9876543210", Trusts: "2e", TrustedSince: at,
		NotAfter: at.Add(90 * 24 * time.Hour), RenewAt: at.Add(60 * 24 * time.Hour), AuthorityNotAfter: at.Add(5 * 365 * 24 * time.Hour),
	})
	for name, ac := range map[string]any{
		"statefulset-tls-replicated-postgresql": sts,
		"statefulset-tls-required-mysql":        mySts,
		"secret-tls-required-postgresql":        secret,
	} {
		t.Run(name, func(t *testing.T) {
			got, err := yaml.Marshal(ac)
			if err != nil {
				t.Fatal(err)
			}
			compareGolden(t, filepath.Join("testdata", name+".golden.yaml"), got)
		})
	}
}

// TestWithTLS: the server's arguments keep its name first and
// cluster_name last; Disabled and engines without TLS change nothing.
func TestWithTLS(t *testing.T) {
	db := newDatabase(dbv1alpha1.EnginePostgreSQL, "16")
	e := lookup(t, db.Spec.Engine)
	for _, tc := range []struct {
		name       string
		replicated bool
		mode       dbv1alpha1.TLSMode
		wantArgs   string
	}{
		{"single", false, dbv1alpha1.TLSEnabled, "postgres -c ssl=on -c ssl_cert_file=/etc/dbc-tls/tls.crt -c ssl_key_file=/etc/dbc-tls/tls.key -c hba_file=/etc/dbc-tls/pg_hba.conf"},
		{"replicated", true, dbv1alpha1.TLSRequired, "postgres -c ssl=on -c ssl_cert_file=/etc/dbc-tls/tls.crt -c ssl_key_file=/etc/dbc-tls/tls.key -c hba_file=/etc/dbc-tls/pg_hba.conf -c wal_log_hints=on -c wal_keep_size=256MB -c hot_standby_feedback=on -c cluster_name=$(POD_NAME)"},
		{"disabled", false, dbv1alpha1.TLSDisabled, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sts := NewStatefulSet(db, e, "postgres:16", StorageOf(db), nil, tc.replicated)
			WithTLS(sts, db, e, tc.mode)
			server := sts.Spec.Template.Spec.Containers[0]
			if got := strings.Join(server.Args, " "); got != tc.wantArgs {
				t.Errorf("args %q, want %q", got, tc.wantArgs)
			}
			mounted := slices.ContainsFunc(server.VolumeMounts, func(m corev1ac.VolumeMountApplyConfiguration) bool { return *m.Name == tlsVolume })
			if mounted != (tc.mode != dbv1alpha1.TLSDisabled) {
				t.Errorf("TLS Secret mounted: %v, want it with TLS %s only", mounted, tc.mode)
			}
			if got := sts.Spec.Template.Annotations[AnnotationTLSMode]; got != map[bool]string{true: string(tc.mode)}[tc.mode != dbv1alpha1.TLSDisabled] {
				t.Errorf("pod template's mode %q, want %q (none when Disabled)", got, tc.mode)
			}
		})
	}
	// MySQL's entrypoint puts the server first; a replicated server's
	// --defaults-extra-file stays first.
	my := newDatabase(dbv1alpha1.EngineMySQL, "8.4")
	files := "--ssl-ca=/etc/dbc-tls/ca.crt --ssl-cert=/etc/dbc-tls/tls.crt --ssl-key=/etc/dbc-tls/tls.key"
	for _, tc := range []struct {
		replicated bool
		mode       dbv1alpha1.TLSMode
		wantArgs   string
	}{
		{false, dbv1alpha1.TLSEnabled, files},
		{true, dbv1alpha1.TLSRequired, "--defaults-extra-file=/var/run/mysqld/dbc-replication.cnf " + files + " --require-secure-transport=ON"},
	} {
		sts := NewStatefulSet(my, lookup(t, my.Spec.Engine), "mysql:8.4", StorageOf(my), nil, tc.replicated)
		WithTLS(sts, my, lookup(t, my.Spec.Engine), tc.mode)
		if got := strings.Join(sts.Spec.Template.Spec.Containers[0].Args, " "); got != tc.wantArgs {
			t.Errorf("MySQL %s, replicated %v: args %q, want %q", tc.mode, tc.replicated, got, tc.wantArgs)
		}
	}
	// MongoDB's entrypoint puts mongod first too.
	mongo := newDatabase(dbv1alpha1.EngineMongoDB, "7.0")
	for mode, tlsMode := range map[dbv1alpha1.TLSMode]string{dbv1alpha1.TLSEnabled: "preferTLS", dbv1alpha1.TLSRequired: "requireTLS"} {
		sts := NewStatefulSet(mongo, lookup(t, mongo.Spec.Engine), "mongo:7.0", StorageOf(mongo), nil, false)
		WithTLS(sts, mongo, lookup(t, mongo.Spec.Engine), mode)
		want := "--tlsMode " + tlsMode + " --tlsCertificateKeyFile /etc/dbc-tls/mongodb.pem --tlsCAFile /etc/dbc-tls/ca.crt --tlsAllowConnectionsWithoutCertificates"
		if got := strings.Join(sts.Spec.Template.Spec.Containers[0].Args, " "); got != want {
			t.Errorf("MongoDB %s: args %q, want %q", mode, got, want)
		}
		// Parameters follow, and split no option from its value.
		WithParameters(sts, lookup(t, mongo.Spec.Engine), map[string]string{"ttlMonitorSleepSecs": "120"})
		if got := strings.Join(sts.Spec.Template.Spec.Containers[0].Args, " "); got != want+" --setParameter ttlMonitorSleepSecs=120" {
			t.Errorf("MongoDB %s with a parameter: args %q", mode, got)
		}
	}
}

// MongoDB's TLS Secret holds the key and the certificate in one file
// (mongod's tlsCertificateKeyFile), and its pods carry the certificate's
// serial number, which a renewal changes, as mongod reads it at start
// only; the other engines' pods do not (they reload).
func TestMongoDBCertificate(t *testing.T) {
	mongo := newDatabase(dbv1alpha1.EngineMongoDB, "7.0")
	e := lookup(t, mongo.Spec.Engine)
	secret := NewTLSSecret(mongo, e, ServerCertificate{CertPEM: []byte("<certificate>\n"), KeyPEM: []byte("<key>\n"), BundlePEM: []byte("<authorities>\n"), Mode: "Enabled"})
	if got := string(secret.Data["mongodb.pem"]); got != "<key>\n<certificate>\n" {
		t.Errorf("mongodb.pem %q, want the key, then the certificate", got)
	}
	sts := NewStatefulSet(mongo, e, "mongo:7.0", StorageOf(mongo), nil, false)
	WithCertificateSerial(sts, e, "1f")
	if got := sts.Spec.Template.Annotations[AnnotationSerial]; got != "1f" {
		t.Errorf("MongoDB's pod template's serial %q, want 1f", got)
	}
	pg := newDatabase(dbv1alpha1.EnginePostgreSQL, "16")
	pgSts := NewStatefulSet(pg, lookup(t, pg.Spec.Engine), "postgres:16", StorageOf(pg), nil, false)
	WithCertificateSerial(pgSts, lookup(t, pg.Spec.Engine), "1f")
	if _, ok := pgSts.Spec.Template.Annotations[AnnotationSerial]; ok {
		t.Errorf("PostgreSQL's pod template carries the serial: a renewal would restart servers that reload")
	}
	if _, ok := NewTLSSecret(pg, lookup(t, pg.Spec.Engine), ServerCertificate{Mode: "Enabled"}).Data["mongodb.pem"]; ok {
		t.Errorf("PostgreSQL's TLS Secret holds mongodb.pem")
	}
}

// A backup Job of a Database with TLS verifies the server it dumps with
// the credentials Secret's ca.crt; one without TLS, or of an engine
// without it, is as before.
func TestBackupJobsVerifyTheServer(t *testing.T) {
	for _, tc := range []struct {
		engine dbv1alpha1.Engine
		mode   dbv1alpha1.TLSMode
		want   bool
	}{
		{dbv1alpha1.EnginePostgreSQL, dbv1alpha1.TLSRequired, true},
		{dbv1alpha1.EnginePostgreSQL, dbv1alpha1.TLSDisabled, false},
		{dbv1alpha1.EngineMySQL, dbv1alpha1.TLSEnabled, true},
		{dbv1alpha1.EngineMySQL, dbv1alpha1.TLSDisabled, false},
		{dbv1alpha1.EngineMongoDB, dbv1alpha1.TLSEnabled, true},
		{dbv1alpha1.EngineMongoDB, dbv1alpha1.TLSDisabled, false},
	} {
		db := newDatabase(tc.engine, "16")
		db.Spec.TLS = &dbv1alpha1.TLSSpec{Mode: tc.mode}
		e := lookup(t, db.Spec.Engine)
		b := backupOf(db, "nightly")
		s := &dbv1alpha1.ObjectStore{Endpoint: "https://s3.example", Bucket: "b", Region: "r"}
		jobs := map[string]*batchv1ac.JobApplyConfiguration{
			"volume":       NewBackupJob(b, db, e, "img"),
			"object store": NewObjectStoreBackupJob(b, db, e, "img", "tools", s, "k"),
		}
		if e.Runtime().Archiving != nil {
			jobs["base backup"] = NewBaseBackupJob(b, db, e, "img", "tools", s, "k")
		}
		if tc.engine == dbv1alpha1.EngineMongoDB {
			jobs["feature compatibility"] = NewFeatureCompatibilityJob(db, e, "img", "7.0", 1)
		}
		for name, job := range jobs {
			spec := job.Spec.Template.Spec
			var env []string
			for _, c := range spec.Containers {
				for _, v := range c.Env {
					if v.Value != nil {
						env = append(env, *v.Name+"="+*v.Value)
					}
				}
			}
			want := map[dbv1alpha1.Engine][]string{
				dbv1alpha1.EnginePostgreSQL: {"PGSSLMODE=verify-full", "PGSSLROOTCERT=/etc/dbc-server-ca/ca.crt"},
				dbv1alpha1.EngineMySQL:      {"DBC_TLS_CA=/etc/dbc-server-ca/ca.crt"},
				dbv1alpha1.EngineMongoDB:    {"DBC_TLS_CA=/etc/dbc-server-ca/ca.crt"},
			}[tc.engine]
			verifies := len(want) > 0 && !slices.ContainsFunc(want, func(v string) bool { return !slices.Contains(env, v) }) &&
				slices.ContainsFunc(spec.Volumes, func(v corev1ac.VolumeApplyConfiguration) bool {
					return *v.Name == serverAuthoritiesVolume && *v.Secret.SecretName == db.Name+"-credentials"
				})
			if verifies != tc.want {
				t.Errorf("%s %s, %s Job verifies the server: %v, want %v", tc.engine, tc.mode, name, verifies, tc.want)
			}
		}
	}
}

func TestAuthorityOf(t *testing.T) {
	now := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	ca, err := certs.NewAuthority(rand.Reader, "default/orders database-controller authority", now, certs.AuthorityValidity)
	if err != nil {
		t.Fatal(err)
	}
	got, err := AuthorityOf(ca)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := certs.Parse(ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.CertPEM) != string(ca.CertPEM) || string(got.KeyPEM) != string(ca.KeyPEM) {
		t.Error("AuthorityOf did not keep the authority's PEM")
	}
	if want := cert.SerialNumber.Text(16); got.Serial != want {
		t.Errorf("Serial = %q, want %q", got.Serial, want)
	}
	if !got.NotAfter.Equal(cert.NotAfter) || !got.NotAfter.After(now) {
		t.Errorf("NotAfter = %v, want the certificate's, %v", got.NotAfter, cert.NotAfter)
	}
	if want := certs.RenewAt(cert); !got.RenewAt.Equal(want) || !got.RenewAt.After(now) || !got.RenewAt.Before(got.NotAfter) {
		t.Errorf("RenewAt = %v, want %v, between now and NotAfter", got.RenewAt, want)
	}
	if _, err := AuthorityOf(certs.Issued{CertPEM: []byte("not a certificate")}); err == nil {
		t.Error("AuthorityOf of a broken certificate did not fail")
	}
}

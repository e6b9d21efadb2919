package builder

import (
	"slices"
	"testing"

	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// The parameters read at start follow the server's name on its command
// line, in the order of their names, before archiving's and replication's
// (cluster_name stays last); a '$' is doubled for the kubelet.
func TestWithParameters(t *testing.T) {
	start := map[string]string{"shared_buffers": "1GB", "search_path": `"$user", public`}
	single := newDatabase(dbv1alpha1.EnginePostgreSQL, "16")
	replicated := newDatabase(dbv1alpha1.EnginePostgreSQL, "16")
	replicated.Spec.Replicas = ptr.To[int32](3)
	archived := replicated.DeepCopy()
	archived.Spec.Backup = &dbv1alpha1.BackupSpec{
		ObjectStore: &dbv1alpha1.ObjectStore{Endpoint: "https://s3.example", Bucket: "b", CredentialsSecret: dbv1alpha1.LocalSecretReference{Name: "keys"}},
		Continuous:  &dbv1alpha1.ContinuousArchiving{},
	}
	e := lookup(t, dbv1alpha1.EnginePostgreSQL)
	params := []string{"-c", `search_path="$$user", public`, "-c", "shared_buffers=1GB"}
	for _, tc := range []struct {
		name       string
		db         *dbv1alpha1.Database
		replicated bool
		want       []string
	}{
		{"one server", single, false, append([]string{"postgres"}, params...)},
		{"replicated", replicated, true, append(append([]string{"postgres"}, params...),
			"-c", "wal_log_hints=on", "-c", "wal_keep_size=256MB", "-c", "hot_standby_feedback=on", "-c", "cluster_name=$(POD_NAME)")},
		{"archiving", archived, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sts := NewStatefulSet(tc.db, e, "postgres:16", StorageOf(tc.db), nil, tc.replicated)
			if tc.db.Spec.Backup != nil {
				WithArchiving(sts, tc.db, e, "tools:1")
			}
			WithParameters(sts, e, start)
			got := sts.Spec.Template.Spec.Containers[0].Args
			if tc.want == nil {
				if !slices.Equal(got[:5], append([]string{"postgres"}, params...)) || got[5] != "-c" || got[6] != "archive_mode=on" || got[len(got)-1] != "cluster_name=$(POD_NAME)" {
					t.Errorf("arguments %q: want postgres, the parameters, archiving's, replication's", got)
				}
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("arguments\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// MySQL's parameters read at start come first on a server of its own,
// where the image's entrypoint puts the server before them, and after
// --defaults-extra-file on a replicated one, which must come first.
func TestWithParametersMySQL(t *testing.T) {
	start := map[string]string{"back_log": "123", "sql_mode": "A,B"}
	single := newDatabase(dbv1alpha1.EngineMySQL, "8.4")
	replicated := newDatabase(dbv1alpha1.EngineMySQL, "8.4")
	replicated.Spec.Replicas = ptr.To[int32](3)
	e := lookup(t, dbv1alpha1.EngineMySQL)
	for _, tc := range []struct {
		name       string
		db         *dbv1alpha1.Database
		replicated bool
		want       []string
	}{
		{"one server", single, false, []string{"--back_log=123", "--sql_mode=A,B"}},
		{"replicated", replicated, true, []string{"--defaults-extra-file=/var/run/mysqld/dbc-replication.cnf", "--back_log=123", "--sql_mode=A,B"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sts := NewStatefulSet(tc.db, e, "mysql:8.4", StorageOf(tc.db), nil, tc.replicated)
			WithParameters(sts, e, start)
			if got := sts.Spec.Template.Spec.Containers[0].Args; !slices.Equal(got, tc.want) {
				t.Errorf("arguments\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

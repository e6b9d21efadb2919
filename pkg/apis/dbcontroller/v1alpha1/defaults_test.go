package v1alpha1

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/dbcontroller/database-controller/pkg/crdtest"
)

// schemaDefault is the default the generated CRD gives the field at path,
// a dotted path below the Database, as JSON.
func schemaDefault(t *testing.T, path string) string {
	t.Helper()
	d, ok := crdtest.Field(t, path)["default"]
	if !ok {
		t.Fatalf("the CRD gives %s no default", path)
	}
	out, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// The defaults the controller reads unset fields with are those the API
// server writes: one value, in two places that must agree.
func TestSchemaDefaultsMatch(t *testing.T) {
	for _, tt := range []struct {
		path string
		want any
	}{
		{"spec.replicas", DefaultReplicas},
		{"spec.deletionPolicy", DefaultDeletionPolicy},
		{"spec.backup.retention", DefaultRetention},
		{"spec.backup.finalBackup", DefaultFinalBackup},
		{"spec.replication.synchronous.dataDurability", DefaultDataDurability},
		{"spec.tls", map[string]any{}},
		{"spec.tls.mode", DefaultTLSMode},
	} {
		t.Run(tt.path, func(t *testing.T) {
			want, _ := json.Marshal(tt.want)
			if got := schemaDefault(t, tt.path); got != string(want) {
				t.Errorf("the CRD's default of %s is %s, the controller's %s", tt.path, got, want)
			}
		})
	}
}

func TestDefaultsOfUnsetFields(t *testing.T) {
	var spec DatabaseSpec
	if got := spec.DesiredReplicas(); got != 1 {
		t.Errorf("DesiredReplicas of an unset spec.replicas = %d, want 1", got)
	}
	if !spec.Retains() {
		t.Error("an unset deletionPolicy does not retain")
	}
	if got := spec.FailoverDelay(); got != 30*time.Second {
		t.Errorf("FailoverDelay unset = %s, want 30s", got)
	}
	var backup BackupSpec
	if got := backup.RetentionCount(); got != 7 {
		t.Errorf("RetentionCount unset = %d, want 7", got)
	}
	if !backup.FinalBackupWanted() {
		t.Error("an unset finalBackup takes no final backup")
	}
	if got := spec.TLSMode(); got != TLSDisabled {
		t.Errorf("TLSMode with no spec.tls = %s, want Disabled", got)
	}
	if got := (&DatabaseSpec{TLS: &TLSSpec{}}).TLSMode(); got != TLSEnabled {
		t.Errorf("TLSMode of spec.tls {} = %s, want Enabled", got)
	}
	if got := (&SynchronousReplication{}).Durability(); got != DataDurabilityRequired {
		t.Errorf("Durability unset = %s, want Required", got)
	}

	set := DatabaseSpec{Replicas: ptr.To[int32](0), DeletionPolicy: DeletionPolicyDelete,
		Replication: &ReplicationSpec{FailoverDelaySeconds: ptr.To[int32](5)}}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"DesiredReplicas", set.DesiredReplicas(), int32(0)},
		{"Retains", set.Retains(), false},
		{"FailoverDelay", set.FailoverDelay(), 5 * time.Second},
		{"RetentionCount", (&BackupSpec{Retention: ptr.To[int32](2)}).RetentionCount(), int32(2)},
		{"FinalBackupWanted", (&BackupSpec{FinalBackup: ptr.To(false)}).FinalBackupWanted(), false},
		{"Durability", (&SynchronousReplication{DataDurability: DataDurabilityPreferred}).Durability(), DataDurabilityPreferred},
	} {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s of a set field = %v, want %v", c.name, c.got, c.want)
		}
	}
}

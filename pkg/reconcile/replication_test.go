package reconcile

import (
	"testing"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

func TestSynchronousStandbyNames(t *testing.T) {
	sync := func(n int32, d dbv1alpha1.DataDurability) *dbv1alpha1.ReplicationSpec {
		return &dbv1alpha1.ReplicationSpec{Synchronous: &dbv1alpha1.SynchronousReplication{Number: n, DataDurability: d}}
	}
	for _, tt := range []struct {
		name      string
		spec      *dbv1alpha1.ReplicationSpec
		streaming int
		desired   int32
		want      string
	}{
		{"no replication spec: asynchronous", nil, 2, 3, ""},
		{"no synchronous: asynchronous", &dbv1alpha1.ReplicationSpec{}, 2, 3, ""},
		{"a quorum of one", sync(1, dbv1alpha1.DataDurabilityRequired), 2, 3, "ANY 1 (*)"},
		{"required: the quorum stays while too few stream, and writes wait", sync(2, dbv1alpha1.DataDurabilityRequired), 1, 3, "ANY 2 (*)"},
		{"preferred: asynchronous while too few stream", sync(2, dbv1alpha1.DataDurabilityPreferred), 1, 3, ""},
		{"preferred: the quorum once enough stream", sync(2, dbv1alpha1.DataDurabilityPreferred), 2, 3, "ANY 2 (*)"},
		{"never more than the replicas there are (scaled down)", sync(2, dbv1alpha1.DataDurabilityRequired), 1, 2, "ANY 1 (*)"},
		{"one pod: no replica to wait for", sync(1, dbv1alpha1.DataDurabilityRequired), 0, 1, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := SynchronousStandbyNames(tt.spec, tt.streaming, tt.desired); got != tt.want {
				t.Errorf("SynchronousStandbyNames = %q, want %q", got, tt.want)
			}
		})
	}
}

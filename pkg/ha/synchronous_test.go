package ha

import "testing"

func TestSynchronousReplicas(t *testing.T) {
	for _, tt := range []struct {
		name      string
		number    int32
		preferred bool
		streaming int
		desired   int32
		want      int32
	}{
		{"no synchronous replication asked for: asynchronous", 0, false, 2, 3, 0},
		{"a quorum of one", 1, false, 2, 3, 1},
		{"required: the quorum stays while too few stream, and writes wait", 2, false, 1, 3, 2},
		{"preferred: asynchronous while too few stream", 2, true, 1, 3, 0},
		{"preferred: the quorum once enough stream", 2, true, 2, 3, 2},
		{"never more than the replicas there are (scaled down)", 2, false, 1, 2, 1},
		{"one pod: no replica to wait for", 1, false, 0, 1, 0},
		{"stopped: no replica to wait for", 1, false, 0, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := SynchronousReplicas(tt.number, tt.preferred, tt.streaming, tt.desired); got != tt.want {
				t.Errorf("SynchronousReplicas = %d, want %d", got, tt.want)
			}
		})
	}
}

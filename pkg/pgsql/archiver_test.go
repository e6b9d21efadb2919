package pgsql

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/ha"
)

// The archiver's statistics and the archive command's last words, to the
// second; a server that never archived has no times. A server that has not
// read its configuration since it started is asked to, once.
func TestArchiver(t *testing.T) {
	archived := time.Date(2026, 11, 25, 10, 0, 0, 123456789, time.UTC)
	failed := archived.Add(time.Minute)
	for _, tc := range []struct {
		name string
		row  []any
		want dbv1alpha1.ArchiveStatus
		sent []string
	}{
		{"never archived", []any{"", (*time.Time)(nil), "", (*time.Time)(nil), "", false}, dbv1alpha1.ArchiveStatus{},
			[]string{"dial", archiverQuery, "close"}},
		{"just started", []any{"", (*time.Time)(nil), "", (*time.Time)(nil), "", true}, dbv1alpha1.ArchiveStatus{},
			[]string{"dial", archiverQuery, wakeQuery, "close"}},
		{"archived, then failed", []any{"000000010000000000000003", &archived, "000000010000000000000004", &failed,
			"writing wal/000000010000000000000004 to bucket backups: Access Denied.\n", false},
			dbv1alpha1.ArchiveStatus{LastArchivedWAL: "000000010000000000000003", LastArchivedTime: ptr.To(metav1.NewTime(archived.Truncate(time.Second))),
				LastFailedWAL: "000000010000000000000004", LastFailedTime: ptr.To(metav1.NewTime(failed.Truncate(time.Second))),
				LastFailure: "writing wal/000000010000000000000004 to bucket backups: Access Denied."},
			[]string{"dial", archiverQuery, "close"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &server{rows: map[string][][]any{archiverQuery: {tc.row}}}
			got, err := archiver(context.Background(), s.client().dial, "10.0.0.1", 5432, ha.Credentials{})
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(*got, tc.want) {
				t.Errorf("got %+v, want %+v", *got, tc.want)
			}
			checkSent(t, s, tc.sent...)
		})
	}
}

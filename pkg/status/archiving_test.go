package status

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// What the status says of the archiving keeps the newer archived file and
// the newer failure of what it said and what the primary says: a new
// primary's statistics start empty.
func TestMergeArchive(t *testing.T) {
	at := func(m int) *metav1.Time {
		v := metav1.NewTime(time.Date(2026, 11, 25, 10, m, 0, 0, time.UTC))
		return &v
	}
	archived := func(wal string, m int) *dbv1alpha1.ArchiveStatus {
		return &dbv1alpha1.ArchiveStatus{LastArchivedWAL: wal, LastArchivedTime: at(m)}
	}
	failed := &dbv1alpha1.ArchiveStatus{LastFailedWAL: "000000010000000000000004", LastFailedTime: at(3), LastFailure: "Access Denied."}
	for _, tc := range []struct {
		name     string
		old, now *dbv1alpha1.ArchiveStatus
		want     *dbv1alpha1.ArchiveStatus
	}{
		{"nothing said", nil, &dbv1alpha1.ArchiveStatus{}, nil},
		{"first answer", nil, archived("000000010000000000000003", 2), archived("000000010000000000000003", 2)},
		{"a new primary that archived nothing yet", archived("000000010000000000000003", 2), &dbv1alpha1.ArchiveStatus{}, archived("000000010000000000000003", 2)},
		{"a newer file", archived("000000010000000000000003", 2), archived("000000020000000000000004", 5), archived("000000020000000000000004", 5)},
		{"a failure, then a new primary archives", failed, archived("00000002.history", 5),
			&dbv1alpha1.ArchiveStatus{LastArchivedWAL: "00000002.history", LastArchivedTime: at(5),
				LastFailedWAL: "000000010000000000000004", LastFailedTime: at(3), LastFailure: "Access Denied."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MergeArchive(tc.old, tc.now)
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if c := ArchiveCondition(MergeArchive(failed, archived("00000002.history", 5))); c.Status != metav1.ConditionTrue {
		t.Errorf("archived after the failure: %s %s", c.Status, c.Message)
	}
}

// The recoverable window runs from the oldest base backup's consistent
// point to the later of it and the last archived file; without a base
// backup it goes, and what the primary said now is preferred to what the
// status said.
func TestRecoverable(t *testing.T) {
	at := func(m int) *metav1.Time {
		v := metav1.NewTime(time.Date(2026, 11, 25, 10, m, 0, 0, time.UTC))
		return &v
	}
	archivedAt := func(m int) *dbv1alpha1.ArchiveStatus {
		return &dbv1alpha1.ArchiveStatus{LastArchivedWAL: "000000010000000000000009", LastArchivedTime: at(m)}
	}
	window := func(a *dbv1alpha1.ArchiveStatus, first, last int) *dbv1alpha1.ArchiveStatus {
		if a == nil {
			a = &dbv1alpha1.ArchiveStatus{}
		}
		a.FirstRecoverableTime, a.LastRecoverableTime = at(first), at(last)
		return a
	}
	for _, tc := range []struct {
		name     string
		old, now *dbv1alpha1.ArchiveStatus
		from     *metav1.Time
		want     *dbv1alpha1.ArchiveStatus
	}{
		{"nothing", nil, nil, nil, nil},
		{"no base backup: the window goes", window(archivedAt(5), 1, 5), nil, nil, archivedAt(5)},
		{"no base backup, nothing archived: nothing", window(nil, 1, 1), nil, nil, nil},
		{"archived since the base backup", archivedAt(5), nil, at(2), window(archivedAt(5), 2, 5)},
		{"the primary says more now", archivedAt(5), archivedAt(7), at(2), window(archivedAt(7), 2, 7)},
		{"the base backup completed after the last file the status knows of", archivedAt(5), nil, at(6), window(archivedAt(5), 6, 6)},
		{"a base backup, nothing archived yet", nil, nil, at(6), window(nil, 6, 6)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := recoverable(tc.old, tc.now, tc.from)
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

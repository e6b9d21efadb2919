package status

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// Reasons of the ContinuousArchiving condition.
const (
	ReasonArchiving            = "Archiving"
	ReasonArchivingPending     = "ArchivingPending"
	ReasonArchivingFailed      = "ArchivingFailed"
	ReasonArchivingUnavailable = "ArchivingUnavailable"
)

// ArchiveCondition is the ContinuousArchiving condition of what the
// primary said of its archiving: False when its last attempt failed (it
// failed after its last success), Unknown before a first segment is
// archived, True otherwise. The server keeps a segment it could not
// archive and tries again; the Database serves on.
func ArchiveCondition(a *dbv1alpha1.ArchiveStatus) metav1.Condition {
	c := metav1.Condition{Type: dbv1alpha1.ConditionContinuousArchiving}
	if a == nil {
		a = &dbv1alpha1.ArchiveStatus{}
	}
	failing := a.LastFailedTime != nil && (a.LastArchivedTime == nil || a.LastFailedTime.After(a.LastArchivedTime.Time))
	switch {
	case failing:
		why := a.LastFailure
		if why == "" {
			why = "the archive command left no words; see the server's log"
		}
		c.Status, c.Reason = metav1.ConditionFalse, ReasonArchivingFailed
		c.Message = fmt.Sprintf("the primary could not archive WAL file %s (last tried %s): %s; it keeps the file and tries again, and the Database serves on",
			a.LastFailedWAL, a.LastFailedTime.UTC().Format(time.RFC3339), why)
	case a.LastArchivedTime == nil:
		c.Status, c.Reason = metav1.ConditionUnknown, ReasonArchivingPending
		c.Message = "no WAL file archived yet: the first is once written, within spec.backup.continuous.archiveTimeoutSeconds of a write"
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonArchiving
		c.Message = fmt.Sprintf("WAL archived up to %s at %s", a.LastArchivedWAL, a.LastArchivedTime.UTC().Format(time.RFC3339))
	}
	return c
}

// ArchiveUnavailable is the ContinuousArchiving condition of a controller
// that cannot make the servers archive.
func ArchiveUnavailable(why string) metav1.Condition {
	return metav1.Condition{Type: dbv1alpha1.ConditionContinuousArchiving, Status: metav1.ConditionFalse, Reason: ReasonArchivingUnavailable, Message: why}
}

// MergeArchive is what the status says of the archiving, from what it
// said (old) and what the primary says now (now): the newer archived file
// and the newer failure of the two. A server's statistics are its own: a
// new primary has archived nothing yet, and a crash resets them, while
// the store holds what the servers before it archived. Nil when neither
// says anything (an empty object is not written: the API server would
// take it for null).
func MergeArchive(old, now *dbv1alpha1.ArchiveStatus) *dbv1alpha1.ArchiveStatus {
	var merged dbv1alpha1.ArchiveStatus
	for _, a := range []*dbv1alpha1.ArchiveStatus{old, now} {
		if a == nil {
			continue
		}
		if a.LastArchivedTime != nil && (merged.LastArchivedTime == nil || !a.LastArchivedTime.Before(merged.LastArchivedTime)) {
			merged.LastArchivedWAL, merged.LastArchivedTime = a.LastArchivedWAL, a.LastArchivedTime.DeepCopy()
		}
		if a.LastFailedTime != nil && (merged.LastFailedTime == nil || !a.LastFailedTime.Before(merged.LastFailedTime)) {
			merged.LastFailedWAL, merged.LastFailedTime, merged.LastFailure = a.LastFailedWAL, a.LastFailedTime.DeepCopy(), a.LastFailure
		}
	}
	if merged == (dbv1alpha1.ArchiveStatus{}) {
		return nil
	}
	return &merged
}

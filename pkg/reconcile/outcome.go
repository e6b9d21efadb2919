package reconcile

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// WaitingError says that a child this process created is not in the
// informer cache yet, or that the one a decision was made on was replaced
// since (Replaced). Its informer event brings the Database back, so the
// pass ends quietly, with no status write and no retry.
type WaitingError struct {
	Kind, Name string
	Replaced   bool
}

func (e *WaitingError) Error() string {
	if e.Replaced {
		return fmt.Sprintf("waiting for the cache to show %s %s as it is now: the one the pass decided on was replaced", e.Kind, e.Name)
	}
	return fmt.Sprintf("waiting for the cache to show %s %s, created by this process", e.Kind, e.Name)
}

// RecheckError says that the status is written, and that what it reports
// may change where no informer sees it, such as the events on a Pending
// claim: the Database is to be looked at again on a capped backoff.
type RecheckError struct {
	Why string
	// After, when set, is when to look again, in place of the backoff: a
	// replicated Database's servers are asked at a steady pace, and a
	// cause that time alone makes is looked for when it falls due.
	After time.Duration
	// Due says After is when a cause falls due (a recheck, once), not the
	// pace of asking the servers (a poll).
	Due bool
}

func (e *RecheckError) Error() string { return "look again: " + e.Why }

// NamespaceDeleting reports whether err is the API server's refusal to
// create anything in a namespace that is being deleted: the namespace goes,
// with the Database and all it owns, so there is nothing to retry, to
// report or to log as an error.
func NamespaceDeleting(err error) bool {
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// IsWaiting reports whether err is a *WaitingError.
func IsWaiting(err error) bool {
	var w *WaitingError
	return errors.As(err, &w)
}

// conflict is the problem of a child's name taken by an object that db does
// not control. It may clear when that object goes: look again soon.
func conflict(db *dbv1alpha1.Database, kind, name string) *status.Problem {
	return &status.Problem{Reason: status.ReasonResourceConflict, Recheck: true, Message: fmt.Sprintf(
		"%s %s/%s already exists and is not controlled by this Database; it is left untouched: delete or rename it, or give the Database another name",
		kind, db.Namespace, name)}
}

// apiMessage is the API server's own message for err, else err's text.
func apiMessage(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Message != "" {
		return st.Status().Message
	}
	return err.Error()
}

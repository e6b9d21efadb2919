package reconcile

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// cause finds why the Database's replicas are not ready, from the pods and
// claims in the caches. A claim that is Pending is the one case that reads
// the API: its provisioning failure is only in the Warning events the
// volume controller records on it. When what it finds may change unseen,
// it asks for a recheck.
func (p *pass) cause(ctx context.Context) (*status.Cause, error) {
	db := p.db
	if p.statefulSet == nil {
		return nil, nil
	}
	in := status.CauseInput{ProvisioningFailures: map[string]string{}, Now: p.r.clock.Now()}
	prefix := names.ClaimPrefix(db)
	provisioning := false
	for _, c := range p.claims {
		if !strings.HasPrefix(c.Name, prefix) {
			continue
		}
		in.Claims = append(in.Claims, c)
		if c.Status.Phase != corev1.ClaimPending {
			continue
		}
		if status.Young(c.CreationTimestamp.Time, in.Now) {
			// Being provisioned, as every new volume is for a moment: no
			// cause yet, and no read of its events.
			provisioning = true
			continue
		}
		msg, err := p.r.provisioningFailure(ctx, c)
		if err != nil {
			return nil, err
		}
		in.ProvisioningFailures[c.Name] = msg
	}
	in.Pods = p.pods
	cause := status.FindCause(in)
	switch {
	case cause == nil && provisioning:
		// Named if it still waits once the grace is over.
		p.recheck = "a volume is being provisioned"
	case cause != nil && cause.Reason == status.ReasonVolumePending:
		// Whether its provisioning fails is in the claim's events, which no
		// informer watches: look again soon.
		p.recheck = cause.Message
	case cause == nil && status.StartingContainers(p.pods):
		// A container that runs and is not ready becomes a cause with time
		// alone, which no informer reports either.
		p.recheck = "a container is running and not ready yet"
	}
	return cause, nil
}

// provisioningFailure is the message of the Warning event on claim when it
// is the newest event on it and has been repeated, or "". The volume
// controller retries a failed provisioning and records each failure again;
// a failure that is not repeated, or that a Normal event followed, such as
// a write conflict it retried at once, passes by itself.
//
// What the events said is remembered for status.VolumeGrace: a claim's
// events are read at most once in that time, however often its Database
// is synced while it waits.
func (r *Reconciler) provisioningFailure(ctx context.Context, claim *corev1.PersistentVolumeClaim) (string, error) {
	if msg, known := r.claimEvents.get(claim.UID); known && claim.UID != "" {
		return msg, nil
	}
	msg, err := r.readProvisioningFailure(ctx, claim)
	if err == nil {
		r.claimEvents.put(claim.UID, msg)
	}
	return msg, err
}

func (r *Reconciler) readProvisioningFailure(ctx context.Context, claim *corev1.PersistentVolumeClaim) (string, error) {
	selector := fields.Set{
		"involvedObject.kind": "PersistentVolumeClaim",
		"involvedObject.name": claim.Name,
	}.AsSelector().String()
	events, err := r.events.CoreV1().Events(claim.Namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return "", err
	}
	var newest *corev1.Event
	for i := range events.Items {
		e := &events.Items[i]
		if e.InvolvedObject.Kind != "PersistentVolumeClaim" || e.InvolvedObject.Name != claim.Name ||
			(e.InvolvedObject.UID != "" && e.InvolvedObject.UID != claim.UID) {
			continue
		}
		if newest == nil || eventTime(e).After(eventTime(newest).Time) {
			newest = e
		}
	}
	if newest == nil || newest.Type != corev1.EventTypeWarning || repeats(newest) < 2 {
		return "", nil
	}
	return strings.TrimSpace(newest.Message), nil
}

// repeats is how many times an event was recorded.
func repeats(e *corev1.Event) int32 {
	if e.Series != nil && e.Series.Count > e.Count {
		return e.Series.Count
	}
	return e.Count
}

func eventTime(e *corev1.Event) metav1.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.Time{Time: e.EventTime.Time}
	default:
		return e.FirstTimestamp
	}
}

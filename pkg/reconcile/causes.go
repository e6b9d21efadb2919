package reconcile

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"

	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// cause finds why the Database's replicas are not ready, from what the
// pass found of its StatefulSet, claims and pods, and the claims' events in
// the caches. When what it finds may change with time alone, it says when
// to look again (recheck): when a cause falls due, or soon.
func (p *pass) cause(ctx context.Context, f *findings) (cause *status.Cause, recheck *RecheckError, err error) {
	db := p.db
	if f.statefulSet == nil {
		return nil, nil, nil
	}
	in := status.CauseInput{ProvisioningFailures: map[string]string{}, Now: p.r.clock.Now()}
	prefix := names.ClaimPrefix(db)
	provisioning := false
	for _, c := range f.claims {
		if !strings.HasPrefix(c.Name, prefix) {
			continue
		}
		in.Claims = append(in.Claims, c)
		if c.Status.Phase != corev1.ClaimPending {
			continue
		}
		if status.Young(c.CreationTimestamp.Time, in.Now) {
			// Being provisioned, as every new volume is for a moment: no
			// cause yet.
			provisioning = true
			continue
		}
		events, err := p.read.eventsOf(c)
		if err != nil {
			return nil, nil, err
		}
		in.ProvisioningFailures[c.Name] = provisioningFailure(events)
	}
	in.Pods = f.pods
	cause = status.FindCause(in)
	if cause != nil && cause.Pod != nil &&
		!sameCause(meta.FindStatusCondition(p.stored.Status.Conditions, dbv1alpha1.ConditionReady), cause) {
		// A new cause: what the probe said is worth a read of the pod's
		// events, once. While it lasts, the status keeps those words.
		event, err := p.probeFailure(ctx, cause.Pod)
		if err != nil {
			return nil, nil, err
		}
		cause = cause.WithProbeOutput(event)
	}
	why := ""
	switch {
	case cause != nil:
	case provisioning:
		// Named if it still waits once the grace is over.
		why = "a volume is being provisioned"
	case status.StartingContainers(f.pods):
		// A container that runs and is not ready becomes a cause with time
		// alone, which no informer reports.
		why = "a container is running and not ready yet"
	}
	if why == "" {
		// A claim that waits longer needs no recheck: a new event about
		// it, or its binding, reaches the Database through the informers.
		return cause, nil, nil
	}
	// Once, when the grace is over: anything sooner (the claim bound, the
	// container ready) reaches the Database through the informers. (A
	// backoff from 5 s queued each Database 1.26 times at N=1,000.)
	if due := status.CauseDue(in); !due.IsZero() {
		return nil, &RecheckError{Why: why, After: due.Sub(in.Now), Due: true}, nil
	}
	return nil, &RecheckError{Why: why}, nil
}

// provisioningFailure is the message of the Warning event among a claim's
// events when it is the newest of them and has been repeated, or "". The
// volume controller retries a failed provisioning and records each failure
// again; a failure that is not repeated, or that a Normal event followed,
// such as a write conflict it retried at once, passes by itself.
func provisioningFailure(events []*corev1.Event) string {
	var newest *corev1.Event
	for _, e := range events {
		if newest == nil || eventTime(e).After(eventTime(newest).Time) {
			newest = e
		}
	}
	if newest == nil || newest.Type != corev1.EventTypeWarning || repeats(newest) < 2 {
		return ""
	}
	return strings.TrimSpace(newest.Message)
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

// probeFailure is the message of the newest of the kubelet's events of a
// failed readiness probe of pod; "" when there is none. The events are read
// from the API server: no informer watches events about pods, and the read
// is made only when the cause first appears.
func (p *pass) probeFailure(ctx context.Context, pod *corev1.Pod) (string, error) {
	selector := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": pod.Name, "involvedObject.uid": string(pod.UID),
		"reason": "Unhealthy"}.String()
	list, err := p.r.kube.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return "", fmt.Errorf("reading the events of pod %s: %w", pod.Name, err)
	}
	var newest *corev1.Event
	for k := range list.Items {
		e := &list.Items[k]
		if e.InvolvedObject.UID != pod.UID || !strings.HasPrefix(e.Message, status.ReadinessProbeFailed) {
			continue
		}
		if newest == nil || eventTime(e).After(eventTime(newest).Time) {
			newest = e
		}
	}
	if newest == nil {
		return "", nil
	}
	return newest.Message, nil
}

package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/drift"
	"github.com/dbcontroller/database-controller/pkg/ha"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/pgsql"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// ParameterClient checks and sets spec.parameters on one server (package
// pgsql's Parameters). A server's refusal is a *pgsql.RejectedError.
type ParameterClient interface {
	// Check asks the server whether it takes params, changing nothing it
	// runs with (a name's value of previous is put back), and says which
	// it reads only at start.
	Check(ctx context.Context, host string, port int32, cred ha.Credentials, params, previous map[string]string) (atStart map[string]bool, err error)
	// Set sets params on the running server, resets those of reset, and
	// has it take them.
	Set(ctx context.Context, host string, port int32, cred ha.Credentials, params map[string]string, reset []string) error
}

// parameterFindings is what the parameters step decided for the status:
// nothing (decided false: status.parameters and its condition stay), or
// status.parameters and the ParametersApplied condition (nil for none).
type parameterFindings struct {
	decided   bool
	status    *dbv1alpha1.ParametersStatus
	condition *metav1.Condition
	// pollAfter is when to try again a server that did not answer; 0 for
	// no need.
	pollAfter time.Duration
}

// ParametersPoll is how soon servers that did not answer are asked again
// to take spec.parameters.
const ParametersPoll = 10 * time.Second

// ensureParameters gives the servers spec.parameters. A serving primary
// (or the one server) checks them all first, and refuses them as a whole
// or takes them: those it reads only at start go to status.parameters.start,
// which the pods' command line is built from (plan.StartParameters), so
// that the pods restart to take them, as a rollout does; the others are
// set on every serving server. Once every server took them, their digest
// is recorded, and a steady Database costs no SQL. A refusal is recorded
// too, and the same parameters are not asked again.
func (p *pass) ensureParameters(ctx context.Context, pods []*corev1.Pod, repl *replicationFindings) (parameterFindings, error) {
	db := p.db
	if p.plan.Engine == nil || p.plan.Engine.Runtime().Parameters == nil {
		return parameterFindings{}, nil
	}
	old := db.Status.Parameters
	if old == nil && len(db.Spec.Parameters) == 0 {
		return parameterFindings{}, nil
	}
	ps := &dbv1alpha1.ParametersStatus{Start: p.plan.StartParameters}
	if old != nil {
		ps = old.DeepCopy()
	}
	found := parameterFindings{decided: true, status: ps}
	want := db.Spec.Parameters
	if want == nil {
		want = map[string]string{}
	}
	digest := drift.Digest(want)
	switch {
	case ps.Applied == digest:
	case ps.Rejected == digest:
		// Said already: keep the words.
		if c := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionParametersApplied); c != nil {
			kept := *c
			found.condition = &kept
		}
		return found, nil
	default:
		servers, all := p.parameterServers(pods, repl)
		if len(servers) == 0 {
			found.condition = &metav1.Condition{Type: dbv1alpha1.ConditionParametersApplied, Status: metav1.ConditionFalse,
				Reason: status.ReasonParametersPending, Message: "a server checks spec.parameters once one serves"}
			return found, nil
		}
		cred, err := p.credentials(ctx)
		if err != nil {
			return parameterFindings{}, err
		}
		var refused *pgsql.RejectedError
		err = p.applyParameters(ctx, cred, ps, want, digest, servers, all)
		switch {
		case errors.As(err, &refused):
			ps.Rejected = digest
			found.condition = &metav1.Condition{Type: dbv1alpha1.ConditionParametersApplied, Status: metav1.ConditionFalse,
				Reason: status.ReasonParameterRejected,
				Message: fmt.Sprintf("%s refused parameter %s = %q: %s. The servers run with the parameters they had; correct or remove it in spec.parameters",
					servers[0].Name, refused.Name, refused.Value, refused.Message)}
			return found, nil
		case err != nil:
			// Not reached, or lost: asked again at the servers' pace,
			// and the status says why meanwhile.
			klog.FromContext(ctx).V(2).Info("Parameters not checked or set", "err", err)
			found.status = old
			found.pollAfter = ParametersPoll
			found.condition = &metav1.Condition{Type: dbv1alpha1.ConditionParametersApplied, Status: metav1.ConditionFalse,
				Reason: status.ReasonParametersPending, Message: "spec.parameters wait for the servers to take them: " + err.Error()}
			return found, nil
		}
	}
	if len(want) == 0 && ps.Applied == digest && len(ps.Start) == 0 && len(ps.Live) == 0 {
		// None left, anywhere: no status, no condition.
		return parameterFindings{decided: true}, nil
	}
	found.condition = p.parametersCondition(ps, want, pods)
	return found, nil
}

// applyParameters has servers[0], the primary, check want, then sets on
// every server of servers those it takes while running, and resets those
// it was given before and are no longer; all says servers are every pod
// spec.replicas asks for, and only then are they recorded as applied.
func (p *pass) applyParameters(ctx context.Context, cred ha.Credentials, ps *dbv1alpha1.ParametersStatus, want map[string]string, digest string,
	servers []*corev1.Pod, all bool) error {
	port := p.plan.Engine.Runtime().Port
	atStart, err := p.r.parameters.Check(ctx, servers[0].Status.PodIP, port, cred, want, ps.Live)
	if err != nil {
		return err
	}
	var start, live map[string]string
	for name, value := range want {
		m := &live
		if atStart[name] {
			m = &start
		}
		if *m == nil {
			*m = map[string]string{}
		}
		(*m)[name] = value
	}
	var reset []string
	for name := range ps.Live {
		if _, ok := live[name]; !ok {
			reset = append(reset, name)
		}
	}
	slices.Sort(reset)
	for _, pod := range servers {
		if err := p.r.parameters.Set(ctx, pod.Status.PodIP, port, cred, live, reset); err != nil {
			return err
		}
	}
	klog.FromContext(ctx).V(2).Info("Parameters checked and set", "servers", len(servers), "atStart", slices.Sorted(maps.Keys(start)),
		"live", slices.Sorted(maps.Keys(live)), "reset", reset)
	ps.Start, ps.Rejected = start, ""
	if all {
		ps.Live, ps.Applied = live, digest
	}
	return nil
}

// parameterServers are the pods whose servers serve, the primary first: a
// replicated Database's recorded primary and its other ready pods, while
// no failover or switchover is under way; the one server of another. all
// says they are every pod spec.replicas asks for.
func (p *pass) parameterServers(pods []*corev1.Pod, repl *replicationFindings) (servers []*corev1.Pod, all bool) {
	db := p.db
	primary := names.PodName(db, 0)
	if p.plan.Replicated {
		rs := db.Status.Replication
		if repl != nil && repl.status != nil {
			rs = repl.status
		}
		if rs == nil || rs.Primary == "" || rs.TargetPrimary != "" {
			return nil, false
		}
		primary = rs.Primary
	}
	var others []*corev1.Pod
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Status.PodIP == "" || !podReady(pod) {
			continue
		}
		if pod.Name == primary {
			servers = append([]*corev1.Pod{pod}, servers...)
		} else if p.plan.Replicated {
			others = append(others, pod)
		}
	}
	if len(servers) == 0 {
		return nil, false
	}
	slices.SortFunc(others, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	servers = append(servers, others...)
	return servers, int32(len(servers)) >= db.Spec.DesiredReplicas()
}

// parametersCondition is the ParametersApplied condition of parameters the
// servers took: pending while a pod's command line does not have those
// read at start yet (the pods restart, in the safe order, to take them).
func (p *pass) parametersCondition(ps *dbv1alpha1.ParametersStatus, want map[string]string, pods []*corev1.Pod) *metav1.Condition {
	pr := p.plan.Engine.Runtime().Parameters
	escaped := map[string]string{}
	for name, value := range ps.Start {
		escaped[name] = strings.ReplaceAll(value, "$", "$$")
	}
	pending, running, waiting := 0, 0, map[string]bool{}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		running++
		var given map[string]string
		for _, c := range pod.Spec.Containers {
			if c.Name == p.plan.Engine.Name() {
				given = pr.Given(c.Args)
			}
		}
		if maps.Equal(given, escaped) {
			continue
		}
		pending++
		for name := range escaped {
			if given[name] != escaped[name] {
				waiting[name] = true
			}
		}
		for name := range given {
			if _, ok := escaped[name]; !ok {
				waiting[name] = true
			}
		}
	}
	if pending > 0 {
		return &metav1.Condition{Type: dbv1alpha1.ConditionParametersApplied, Status: metav1.ConditionFalse,
			Reason: status.ReasonRestartPending,
			Message: fmt.Sprintf("%s: read only at start; %d of %d servers restart to take them (a replicated Database's replicas first, its primary last, after a switchover)",
				strings.Join(slices.Sorted(maps.Keys(waiting)), ", "), pending, running)}
	}
	if ps.Applied == "" || ps.Applied != drift.Digest(want) {
		return &metav1.Condition{Type: dbv1alpha1.ConditionParametersApplied, Status: metav1.ConditionFalse,
			Reason: status.ReasonParametersPending, Message: "spec.parameters are set on the servers that serve; the others take them once they serve"}
	}
	return &metav1.Condition{Type: dbv1alpha1.ConditionParametersApplied, Status: metav1.ConditionTrue,
		Reason: status.ReasonParametersApplied, Message: fmt.Sprintf("the servers run with the %d parameters of spec.parameters", len(want))}
}

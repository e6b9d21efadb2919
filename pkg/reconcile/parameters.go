package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/drift"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/ha"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// ParameterClient checks and sets spec.parameters on one server (package
// pgsql's or mysqlsql's Parameters). A server's refusal is a
// *ha.RejectedError.
type ParameterClient interface {
	// Check asks the server whether it takes params, changing nothing it
	// runs with (a name's value of previous is put back), and says which
	// it reads only at start.
	Check(ctx context.Context, host string, port int32, cred ha.Credentials, params, previous map[string]string) (atStart map[string]bool, err error)
	// Set sets params on the running server, resets those of reset, and
	// has it take them.
	Set(ctx context.Context, host string, port int32, cred ha.Credentials, params map[string]string, reset []string) error
}

// AtStartOnly is the ParameterClient of an engine whose servers the
// controller does not ask (MongoDB's: it has no MongoDB client): every
// parameter is read at start, unchecked, and nothing is set live.
type AtStartOnly struct{}

// Check says every parameter is read at start, and asks no server.
func (AtStartOnly) Check(_ context.Context, _ string, _ int32, _ ha.Credentials, params, _ map[string]string) (map[string]bool, error) {
	atStart := make(map[string]bool, len(params))
	for name := range params {
		atStart[name] = true
	}
	return atStart, nil
}

// Set has nothing to set.
func (AtStartOnly) Set(context.Context, string, int32, ha.Credentials, map[string]string, []string) error {
	return nil
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
func (p *pass) ensureParameters(ctx context.Context, sts *appsv1.StatefulSet, pods []*corev1.Pod, repl *replicationFindings) (found parameterFindings, err error) {
	defer func() {
		// Nothing recorded is no status.parameters.
		if s := found.status; s != nil && s.Applied == "" && s.Rejected == "" && len(s.Start) == 0 && len(s.Live) == 0 {
			found.status = nil
		}
	}()
	db := p.db
	client := p.r.parameters[db.Spec.Engine]
	if p.plan.Engine == nil || p.plan.Engine.Runtime().Parameters == nil || client == nil {
		return parameterFindings{}, nil
	}
	old := db.Status.Parameters
	if old == nil && len(db.Spec.Parameters) == 0 && db.Spec.ParametersConfigMap == nil {
		return parameterFindings{}, nil
	}
	ps := &dbv1alpha1.ParametersStatus{Start: p.plan.StartParameters}
	if old != nil {
		ps = old.DeepCopy()
	}
	found = parameterFindings{decided: true, status: ps}
	want, refused := p.asked.want, p.asked.refused
	if refused != nil {
		// Nothing is asked of the servers: they keep what they have.
		found.condition = refused
		return found, nil
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
			msg := "a server checks spec.parameters once one serves"
			if failing, start := p.uncheckedStart(want, ps, pods); failing != "" {
				// Down already: a corrected value must reach the pods
				// without a server to check it.
				ps.Start = start
				msg = fmt.Sprintf("no server serves and %s fails to start: the parameters read at start go to the pods unchecked, so that a corrected one reaches them; a server checks them all once one serves", failing)
			}
			found.condition = &metav1.Condition{Type: dbv1alpha1.ConditionParametersApplied, Status: metav1.ConditionFalse,
				Reason: status.ReasonParametersPending, Message: msg}
			return found, nil
		}
		cred, err := p.credentials(ctx)
		if err != nil {
			return parameterFindings{}, err
		}
		var refused *ha.RejectedError
		err = p.applyParameters(ctx, client, cred, ps, want, digest, servers, all)
		switch {
		case errors.As(err, &refused):
			ps.Rejected = digest
			found.condition = &metav1.Condition{Type: dbv1alpha1.ConditionParametersApplied, Status: metav1.ConditionFalse,
				Reason: status.ReasonParameterRejected,
				Message: fmt.Sprintf("%s refused parameter %s = %q: %s. The servers run with the parameters they had; correct or remove it in %s",
					servers[0].Name, refused.Name, refused.Value, refused.Message, parametersSource(db))}
			return found, nil
		case err != nil:
			// Not reached, or lost: asked again at the servers' pace,
			// and the status says why meanwhile.
			klog.FromContext(ctx).V(2).Info("Parameters not checked or set", "err", err)
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
	found.condition = p.parametersCondition(ps, want, sts, pods)
	return found, nil
}

// uncheckedStart is, when a pod of the Database fails to start (named in
// failing), the parameters of want its servers read at start: those
// recorded so, and those the engine reads at start (engine.Parameters'
// AtStart); those set live stay so. No server checked them: the pods
// get them only while none serves, so that a value a server accepted but
// cannot start with, once corrected, reaches a Database that is down
// because of it (a single server, or every one).
func (p *pass) uncheckedStart(want map[string]string, ps *dbv1alpha1.ParametersStatus, pods []*corev1.Pod) (failing string, start map[string]string) {
	for _, pod := range pods {
		if pod.DeletionTimestamp == nil && crashLooping(pod) {
			failing = pod.Name
			break
		}
	}
	if failing == "" {
		return "", nil
	}
	pr := p.plan.Engine.Runtime().Parameters
	for name, value := range want {
		if _, live := ps.Live[name]; live {
			continue
		}
		if _, recorded := ps.Start[name]; recorded || pr.AtStart(name) {
			if start == nil {
				start = map[string]string{}
			}
			start[name] = value
		}
	}
	return failing, start
}

// parametersSource says where db's parameters are given.
func parametersSource(db *dbv1alpha1.Database) string {
	if ref := db.Spec.ParametersConfigMap; ref != nil {
		return "spec.parameters or ConfigMap " + ref.Name
	}
	return "spec.parameters"
}

// askedParameters are the parameters asked for (desiredParameters): want,
// or refused, the condition that says why none are.
type askedParameters struct {
	want    map[string]string
	refused *metav1.Condition
}

// desiredParameters are spec.parameters over the data of the ConfigMap
// spec.parametersConfigMap names. A ConfigMap that is not found, or that
// sets what spec.parameters may not (the schema cannot see it), is the
// condition that says so, and nothing is desired.
func (p *pass) desiredParameters(pr *engine.Parameters) (map[string]string, *metav1.Condition, error) {
	db := p.db
	want := map[string]string{}
	if ref := db.Spec.ParametersConfigMap; ref != nil {
		cm, err := p.read.parametersConfigMap(db.Namespace, ref.Name)
		switch {
		case apierrors.IsNotFound(err):
			return nil, &metav1.Condition{Type: dbv1alpha1.ConditionParametersApplied, Status: metav1.ConditionFalse,
				Reason: status.ReasonParametersConfigMapNotFound,
				Message: fmt.Sprintf("ConfigMap %s, named by spec.parametersConfigMap, is not among the ConfigMaps labelled %s=true, the only ones the controller reads: create it with that label, or label it (kubectl label configmap %s %s=true); the servers keep the parameters they have",
					ref.Name, dbv1alpha1.LabelParameters, ref.Name, dbv1alpha1.LabelParameters)}, nil
		case err != nil:
			return nil, nil, err
		}
		for _, name := range slices.Sorted(maps.Keys(cm.Data)) {
			var why string
			switch value := cm.Data[name]; {
			case !pr.Name.MatchString(name):
				why = pr.NameRule
			case slices.Contains(pr.Owned, name):
				why = "the controller sets it, for the pods, replication, archiving or TLS to work"
			case len(value) > 4096:
				why = "a parameter's value is at most 4096 characters"
			default:
				want[name] = value
				continue
			}
			return nil, &metav1.Condition{Type: dbv1alpha1.ConditionParametersApplied, Status: metav1.ConditionFalse,
				Reason:  status.ReasonParameterRejected,
				Message: fmt.Sprintf("ConfigMap %s sets %s: %s. The servers run with the parameters they had; correct or remove it in the ConfigMap", ref.Name, name, why)}, nil
		}
	}
	maps.Copy(want, db.Spec.Parameters)
	return want, nil, nil
}

// applyParameters has servers[0], the primary, check want, then sets on
// every server of servers those it takes while running, and resets those
// it was given before and are no longer; all says servers are every pod
// spec.replicas asks for, and only then are they recorded as applied.
func (p *pass) applyParameters(ctx context.Context, client ParameterClient, cred ha.Credentials, ps *dbv1alpha1.ParametersStatus, want map[string]string, digest string,
	servers []*corev1.Pod, all bool) error {
	port := p.plan.Engine.Runtime().Port
	atStart, err := client.Check(ctx, servers[0].Status.PodIP, port, cred, want, ps.Live)
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
		if err := client.Set(ctx, pod.Status.PodIP, port, cred, live, reset); err != nil {
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
	rs := p.replicationStatus(repl)
	primary := p.primaryName(rs)
	if primary == "" || (p.plan.Replicated && rs.TargetPrimary != "") {
		return nil, false
	}
	var others []*corev1.Pod
	for _, pod := range pods {
		if !answers(pod) {
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
	return servers, int32(len(servers)) >= p.db.Spec.DesiredReplicas()
}

// parametersCondition is the ParametersApplied condition of parameters the
// servers took: pending while the StatefulSet's template does not give
// those read at start yet (the next pass applies it), or a pod runs an
// earlier revision than the template's (the pods restart, in the safe
// order, to take it).
func (p *pass) parametersCondition(ps *dbv1alpha1.ParametersStatus, want map[string]string, sts *appsv1.StatefulSet, pods []*corev1.Pod) *metav1.Condition {
	pr := p.plan.Engine.Runtime().Parameters
	escaped := map[string]string{}
	for name, value := range ps.Start {
		escaped[name] = strings.ReplaceAll(value, "$", "$$")
	}
	inTemplate := false
	if sts != nil && sts.Status.ObservedGeneration >= sts.Generation {
		for _, c := range sts.Spec.Template.Spec.Containers {
			if c.Name == p.plan.Engine.Name() {
				inTemplate = maps.Equal(pr.Given(c.Args), escaped)
			}
		}
	}
	pending, running := 0, 0
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		running++
		if !inTemplate || pod.Labels[appsv1.ControllerRevisionHashLabelKey] != sts.Status.UpdateRevision {
			pending++
		}
	}
	if pending > 0 && len(ps.Start) > 0 {
		given := make([]string, 0, len(ps.Start))
		for _, name := range slices.Sorted(maps.Keys(ps.Start)) {
			given = append(given, name+"="+ps.Start[name])
		}
		return &metav1.Condition{Type: dbv1alpha1.ConditionParametersApplied, Status: metav1.ConditionFalse,
			Reason: status.ReasonRestartPending,
			Message: fmt.Sprintf("%d of %d servers restart to take the parameters read at start (%s): a replicated Database's replicas first, its primary last, after a switchover",
				pending, running, strings.Join(given, ", "))}
	}
	if ps.Applied == "" || ps.Applied != drift.Digest(want) {
		return &metav1.Condition{Type: dbv1alpha1.ConditionParametersApplied, Status: metav1.ConditionFalse,
			Reason: status.ReasonParametersPending, Message: "spec.parameters are set on the servers that serve; the others take them once they serve"}
	}
	return &metav1.Condition{Type: dbv1alpha1.ConditionParametersApplied, Status: metav1.ConditionTrue,
		Reason: status.ReasonParametersApplied, Message: fmt.Sprintf("the servers run with the %d parameters asked for", len(want))}
}

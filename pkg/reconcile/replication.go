package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/ha"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/pgsql"
	"github.com/dbcontroller/database-controller/pkg/status"
)

const (
	// DefaultFailoverDelay is how long a primary may not serve before a
	// replica is promoted, when spec.replication.failoverDelaySeconds is
	// not set. A pod that restarts in place (its server crashed, or the pod
	// was deleted) serves again within a few seconds, plus its crash
	// recovery: 30 s leaves room for that, as Patroni's default TTL does,
	// while a primary that is really gone is replaced within a minute.
	DefaultFailoverDelay = 30 * time.Second
	// ReplicationPoll is how often a replicated Database's servers are
	// asked what they are, besides every change of its pods: it bounds how
	// long a primary that hangs while its pod stays ready goes unnoticed,
	// and how stale the replicas' lag in the status is.
	ReplicationPoll = 10 * time.Second
	// maxStepsPerPass bounds the actions one pass takes; each is followed
	// by a fresh look at the servers it changed.
	maxStepsPerPass = 8
)

// Reasons of the events of replication.
const (
	ReasonFailingOver    = "FailingOver"
	ReasonSwitchingOver  = "SwitchingOver"
	ReasonPrimaryChosen  = "PrimaryChosen"
	ReasonPrimaryChanged = "PrimaryChanged"
	ReasonFenced         = "Fenced"
	ReasonRollingOut     = "RollingOut"
)

// cachedCredentials are the superuser credentials read from a Database's
// Secret, with the Secret's resourceVersion: the Secret is read again only
// when it changed (or the entry is older than memoryTTL). The informer's
// cache holds no Secret data.
type cachedCredentials struct {
	resourceVersion string
	cred            pgsql.Credentials
}

// credentials returns the superuser credentials of db, from its Secret.
func (p *pass) credentials(ctx context.Context) (pgsql.Credentials, error) {
	r := p.r
	name := names.SecretName(p.db)
	cached, err := r.secrets.Secrets(p.db.Namespace).Get(name)
	if err != nil {
		return pgsql.Credentials{}, err
	}
	if c, ok := r.creds.get(cached.UID); ok && c.resourceVersion == cached.ResourceVersion {
		return c.cred, nil
	}
	live, err := r.kube.CoreV1().Secrets(p.db.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return pgsql.Credentials{}, fmt.Errorf("reading the credentials to talk to the servers: %w", err)
	}
	cred := pgsql.Credentials{User: string(live.Data[engine.SecretKeyUsername]), Password: string(live.Data[engine.SecretKeyPassword])}
	r.creds.put(live.UID, cachedCredentials{resourceVersion: live.ResourceVersion, cred: cred})
	return cred, nil
}

// instance is one pod of a replicated Database as the pass sees it: the
// pod, what its server answered, and what the decision reads.
type instance struct {
	pod   *corev1.Pod
	facts pgsql.Facts
	ha    ha.Instance
}

// ensureReplication keeps a replicated Database's roles: it asks every
// server what it is, and takes the steps package ha decides, one after the
// other, each recorded before it is acted on where a restart must find it
// (the target of a failover or switchover, in the status).
func (p *pass) ensureReplication(ctx context.Context) error {
	if !p.plan.Replicated {
		return nil
	}
	logger := klog.FromContext(ctx)
	db := p.db
	rs := &dbv1alpha1.ReplicationStatus{}
	if db.Status.Replication != nil {
		rs = db.Status.Replication.DeepCopy()
	}
	p.replication = rs
	p.pollAfter = ReplicationPoll
	cred, err := p.credentials(ctx)
	if err != nil {
		return err
	}
	port := p.plan.Engine.Runtime().Port
	instances := p.probeAll(ctx, cred, port)
	if p.desiredReplicas() == 0 {
		// Stopping, or stopped: the servers go down on purpose, and the
		// primary stays the primary for when they start again.
		rs.Instances = instanceStatuses(rs, instances)
		p.replicating = &metav1.Condition{Type: dbv1alpha1.ConditionReplicating, Status: metav1.ConditionFalse, Reason: status.ReasonStopped,
			Message: "replicas is 0: no server runs"}
		if rs.Primary != "" {
			p.replicating.Message += "; " + rs.Primary + " stays the primary"
		}
		p.pollAfter = 0
		return nil
	}
	// The rollout's switchover, once only the primary runs an earlier
	// revision of the pods.
	rollout := p.rolloutTarget(rs, instances)

	var last ha.Action
	for step := 0; ; step++ {
		o := p.observation(rs, instances)
		if o.Requested == "" {
			o.Requested = rollout
		}
		last = ha.Next(o)
		if last.Kind == ha.ActionNone || last.Kind == ha.ActionWait || step == maxStepsPerPass {
			break
		}
		logger.V(2).Info("Replication step", "action", last.Kind, "instance", last.Instance, "reason", last.Reason)
		target := instances[last.Instance]
		switch last.Kind {
		case ha.ActionRecordTarget:
			rs.TargetPrimary = last.Instance
			reason, kind := ReasonFailingOver, corev1.EventTypeWarning
			switch {
			case rs.Primary == "":
				reason, kind = ReasonPrimaryChosen, corev1.EventTypeNormal
			case !primaryLost(rs):
				reason, kind = ReasonSwitchingOver, corev1.EventTypeNormal
			}
			p.replicating = replicatingCondition(rs, instances, last, p.desiredReplicas())
			// Recorded before anything is done for it: a controller
			// restarted from here on finishes this failover, not another.
			if err := p.r.writeStatus(ctx, p, nil); err != nil {
				return err
			}
			p.r.recorder.Event(db, kind, reason, last.Reason)
		case ha.ActionUnlabel:
			if err := p.setRole(ctx, target, ""); err != nil {
				return err
			}
		case ha.ActionLabel:
			if err := p.setRole(ctx, target, dbv1alpha1.RolePrimary); err != nil {
				return err
			}
		case ha.ActionLabelReplica:
			if err := p.setRole(ctx, target, dbv1alpha1.RoleReplica); err != nil {
				return err
			}
		case ha.ActionFence:
			if err := p.r.sql.Fence(ctx, target.pod.Status.PodIP, port, cred, p.plan.Engine.Runtime().Replication.FenceMarker); err != nil {
				return fmt.Errorf("fencing %s: %w", last.Instance, err)
			}
			p.r.recorder.Event(db, corev1.EventTypeNormal, ReasonFenced, last.Reason)
			target.ha.Fenced = true
		case ha.ActionStop:
			if err := p.restart(ctx, target, "to rejoin as a replica"); err != nil {
				return err
			}
			target.ha.Reachable, target.ha.Ready, target.ha.Terminating = false, false, true
		case ha.ActionPromote:
			if err := p.r.sql.Promote(ctx, target.pod.Status.PodIP, port, cred); err != nil {
				return fmt.Errorf("promoting %s: %w", last.Instance, err)
			}
			p.probe(ctx, target, cred, port)
		case ha.ActionCompleteTarget:
			was := rs.Primary
			rs.Primary, rs.TargetPrimary, rs.PrimaryLostSince = last.Instance, "", nil
			if was != "" && was != last.Instance {
				p.r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonPrimaryChanged, "%s is the primary, in place of %s", last.Instance, was)
			}
		}
	}
	if last.Kind == ha.ActionWait && last.After < p.pollAfter {
		p.pollAfter = last.After
	}
	if last.Kind == ha.ActionNone && rs.TargetPrimary == "" {
		if err := p.ensureSynchronous(ctx, rs, instances, cred, port); err != nil {
			return err
		}
		if err := p.rollOutReplica(ctx, rs, instances); err != nil {
			return err
		}
	}
	if rs.TargetPrimary != "" {
		// A failover or switchover goes on: look again soon.
		p.pollAfter = min(p.pollAfter, time.Second)
	}
	rs.Instances = instanceStatuses(rs, instances)
	p.replicating = replicatingCondition(rs, instances, last, p.desiredReplicas())
	return nil
}

// desiredReplicas is spec.replicas, 1 when unset.
func (p *pass) desiredReplicas() int32 {
	if p.db.Spec.Replicas == nil {
		return 1
	}
	return *p.db.Spec.Replicas
}

// SynchronousStandbyNames is the primary's synchronous_standby_names for
// spec, with streaming replicas streaming now and desired pods in all:
// a quorum of number of any replicas ("ANY n (*)"), at most all of them.
// Preferred durability drops to asynchronous ("") while fewer than number
// stream, so that writes go on; Required keeps the quorum, and writes
// wait. A Database of one pod has no replica to wait for.
func SynchronousStandbyNames(spec *dbv1alpha1.ReplicationSpec, streaming int, desired int32) string {
	if spec == nil || spec.Synchronous == nil || desired < 2 {
		return ""
	}
	n := min(spec.Synchronous.Number, desired-1)
	if spec.Synchronous.DataDurability == dbv1alpha1.DataDurabilityPreferred && int32(streaming) < n {
		return ""
	}
	return fmt.Sprintf("ANY %d (*)", n)
}

// ensureSynchronous brings the serving primary's synchronous_standby_names
// to what spec.replication.synchronous asks for.
func (p *pass) ensureSynchronous(ctx context.Context, rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance, cred pgsql.Credentials, port int32) error {
	primary, ok := instances[rs.Primary]
	if !ok || !primary.ha.Serving() {
		return nil
	}
	streaming := 0
	for name, i := range instances {
		if name != rs.Primary && i.ha.Upstream == rs.Primary {
			streaming++
		}
	}
	want := SynchronousStandbyNames(p.db.Spec.Replication, streaming, p.desiredReplicas())
	if primary.facts.SynchronousStandbyNames == want {
		return nil
	}
	if err := p.r.sql.SetSynchronous(ctx, primary.pod.Status.PodIP, port, cred, want); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Set synchronous_standby_names", "pod", klog.KObj(primary.pod), "value", want)
	primary.facts.SynchronousStandbyNames = want
	return nil
}

// revisionLabel is the label of a StatefulSet's pod that names its revision.
const revisionLabel = "controller-revision-hash"

// outdated reports whether i's pod runs an earlier revision than the
// StatefulSet's update revision.
func (p *pass) outdated(i *instance) bool {
	sts := p.statefulSet
	return sts != nil && sts.Status.UpdateRevision != "" && i.pod.Labels[revisionLabel] != sts.Status.UpdateRevision
}

// settledForRollout reports whether a pod may be restarted for a rollout:
// no failover or switchover is under way, the primary serves, every pod
// that spec.replicas asks for exists and is ready, and every replica
// streams from the primary.
func (p *pass) settledForRollout(rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) bool {
	primary, ok := instances[rs.Primary]
	if rs.TargetPrimary != "" || !ok || !primary.ha.Serving() || int32(len(instances)) != p.desiredReplicas() {
		return false
	}
	for name, i := range instances {
		if !i.ha.Ready || (name != rs.Primary && i.ha.Upstream != rs.Primary) {
			return false
		}
	}
	return true
}

// rolloutTarget is, while a rollout has updated every pod but the primary,
// the replica to switch over to: the most advanced one that streams (then
// the lowest ordinal). "" otherwise, and when spec.replication.primary
// names the primary to keep (the primary then restarts in place, last).
func (p *pass) rolloutTarget(rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) string {
	if spec := p.db.Spec.Replication; spec != nil && spec.Primary != "" {
		return ""
	}
	primary, ok := instances[rs.Primary]
	if !ok || !p.outdated(primary) || !p.settledForRollout(rs, instances) {
		return ""
	}
	var best *instance
	for _, name := range sortedNames(instances) {
		i := instances[name]
		if name == rs.Primary {
			continue
		}
		if p.outdated(i) {
			return ""
		}
		if best == nil || i.ha.ReceivedLSN > best.ha.ReceivedLSN {
			best = i
		}
	}
	if best == nil {
		return ""
	}
	return best.ha.Name
}

// rollOutReplica restarts one pod of an earlier revision, so that the
// StatefulSet (OnDelete) makes it again at the update revision: the
// replica of the highest ordinal first, one at a time, each once the
// Database has settled again; the primary last, only when a switchover
// cannot move the role away first (spec.replication.primary keeps it, or
// it is the only pod).
func (p *pass) rollOutReplica(ctx context.Context, rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) error {
	primary, ok := instances[rs.Primary]
	if !ok || !primary.ha.Serving() {
		return nil
	}
	if p.outdated(primary) && !p.anyReplicaStreams(rs, instances) {
		// Alone, as when a single server is scaled up into a replicated
		// Database: no replica can take over, and the new ones may need the
		// new revision of the primary to clone from it (its replication
		// access). It restarts in place.
		return p.restartForRollout(ctx, primary)
	}
	if !p.settledForRollout(rs, instances) {
		return nil
	}
	names := sortedNames(instances)
	var victim *instance
	for k := len(names) - 1; k >= 0; k-- {
		if i := instances[names[k]]; names[k] != rs.Primary && p.outdated(i) {
			victim = i
			break
		}
	}
	if victim == nil {
		primary := instances[rs.Primary]
		if !p.outdated(primary) || (len(instances) > 1 && p.rolloutTarget(rs, instances) != "") {
			return nil
		}
		victim = primary
	}
	return p.restartForRollout(ctx, victim)
}

// anyReplicaStreams reports whether a ready replica streams from the primary.
func (p *pass) anyReplicaStreams(rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) bool {
	for name, i := range instances {
		if name != rs.Primary && i.ha.Ready && i.ha.Upstream == rs.Primary {
			return true
		}
	}
	return false
}

// restartForRollout restarts victim at the StatefulSet's update revision.
func (p *pass) restartForRollout(ctx context.Context, victim *instance) error {
	if err := p.restart(ctx, victim, "at the StatefulSet's update revision"); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Rolling out", "pod", klog.KObj(victim.pod), "revision", p.statefulSet.Status.UpdateRevision)
	p.r.recorder.Eventf(p.db, corev1.EventTypeNormal, ReasonRollingOut, "Restarting %s at the new revision of the pods", victim.pod.Name)
	return nil
}

// restart deletes i's pod, on the UID the decision was made on, so that the
// StatefulSet makes it again; why ends the error.
func (p *pass) restart(ctx context.Context, i *instance, why string) error {
	uid := i.pod.UID
	if err := p.r.kube.CoreV1().Pods(i.pod.Namespace).Delete(ctx, i.pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		return fmt.Errorf("restarting %s %s: %w", i.pod.Name, why, err)
	}
	return nil
}

// primaryLost reports whether the recorded primary was lost: a failover,
// not a switchover.
func primaryLost(rs *dbv1alpha1.ReplicationStatus) bool { return rs.PrimaryLostSince != nil }

// observation is what the decision reads, and keeps the time the primary
// was first seen not serving.
func (p *pass) observation(rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) ha.Observation {
	now := p.r.clock.Now()
	o := ha.Observation{Now: now, Primary: rs.Primary, Target: rs.TargetPrimary, FailoverDelay: DefaultFailoverDelay}
	for _, name := range sortedNames(instances) {
		o.Instances = append(o.Instances, instances[name].ha)
	}
	if spec := p.db.Spec.Replication; spec != nil {
		o.Requested = spec.Primary
		if spec.FailoverDelaySeconds != nil {
			o.FailoverDelay = time.Duration(*spec.FailoverDelaySeconds) * time.Second
		}
	}
	if want := p.db.Spec.Replicas; want != nil && *want > 0 && o.Requested == "" {
		// Scaling down below the primary: move the role to the first pod.
		if ordinal, ok := names.Ordinal(p.db, rs.Primary); ok && int32(ordinal) >= *want {
			o.Requested = names.PodName(p.db, 0)
		}
	}
	if rs.Primary != "" && rs.TargetPrimary == "" {
		if i, ok := instances[rs.Primary]; ok && i.ha.Serving() {
			rs.PrimaryLostSince = nil
		} else if rs.PrimaryLostSince == nil {
			t := metav1.NewTime(now)
			rs.PrimaryLostSince = &t
		}
	}
	if rs.PrimaryLostSince != nil {
		o.PrimaryLostSince = rs.PrimaryLostSince.Time
	}
	return o
}

// probeAll asks every pod's server, at once, what it is.
func (p *pass) probeAll(ctx context.Context, cred pgsql.Credentials, port int32) map[string]*instance {
	instances := map[string]*instance{}
	var wg sync.WaitGroup
	for _, pod := range p.pods {
		ordinal, ok := names.Ordinal(p.db, pod.Name)
		if !ok {
			continue
		}
		i := &instance{pod: pod, ha: ha.Instance{Name: pod.Name, Ordinal: ordinal, Role: ha.Role(pod.Labels[dbv1alpha1.LabelRole]),
			Ready: podReady(pod) && pod.DeletionTimestamp == nil, Terminating: terminating(pod, p.r.clock.Now())}}
		instances[pod.Name] = i
		wg.Go(func() { p.probe(ctx, i, cred, port) })
	}
	wg.Wait()
	// A replica streams from the primary when the primary says so.
	for _, i := range instances {
		if !i.ha.Reachable || i.ha.InRecovery {
			continue
		}
		for _, s := range i.facts.Standbys {
			if r, ok := instances[s.Name]; ok && s.Streaming && r.ha.InRecovery {
				r.ha.Upstream = i.ha.Name
			}
		}
	}
	return instances
}

// probe asks i's server what it is; a server that does not answer, or
// answers as another pod, is not reachable.
func (p *pass) probe(ctx context.Context, i *instance, cred pgsql.Credentials, port int32) {
	i.ha.Reachable = false
	if i.pod.Status.PodIP == "" || i.pod.DeletionTimestamp != nil {
		return
	}
	facts, err := p.r.sql.Probe(ctx, i.pod.Status.PodIP, port, cred)
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Server does not answer", "pod", klog.KObj(i.pod), "err", err)
		return
	}
	if facts.Name != "" && facts.Name != i.pod.Name {
		// The address is another pod's now: a stale cache.
		return
	}
	i.facts = facts
	i.ha.Reachable, i.ha.InRecovery, i.ha.Timeline = true, facts.InRecovery, facts.Timeline
	i.ha.ReceivedLSN, i.ha.ReplayedLSN, i.ha.WrittenLSN, i.ha.Fenced = facts.ReceivedLSN, facts.ReplayedLSN, facts.WrittenLSN, facts.Fenced
}

// setRole sets (or with "" removes) the role label of i's pod, on the pod
// the decision was made on (its UID), and records it for the next step.
func (p *pass) setRole(ctx context.Context, i *instance, role string) error {
	var value interface{}
	if role != "" {
		value = role
	}
	patch, err := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{
		"uid":    i.pod.UID,
		"labels": map[string]interface{}{dbv1alpha1.LabelRole: value},
	}})
	if err != nil {
		return err
	}
	if _, err := p.r.kube.CoreV1().Pods(i.pod.Namespace).Patch(ctx, i.pod.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("setting the role label of %s: %w", i.pod.Name, err)
	}
	i.ha.Role = ha.Role(role)
	return nil
}

// instanceStatuses reports each pod in the status, by name.
func instanceStatuses(rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) []dbv1alpha1.InstanceStatus {
	lag := map[string]int64{}
	if pr, ok := instances[rs.Primary]; ok && pr.ha.Reachable && !pr.ha.InRecovery {
		for _, s := range pr.facts.Standbys {
			lag[s.Name] = s.LagBytes
		}
	}
	out := make([]dbv1alpha1.InstanceStatus, 0, len(instances))
	for _, name := range sortedNames(instances) {
		i := instances[name]
		st := dbv1alpha1.InstanceStatus{Name: name}
		switch {
		case !i.ha.Reachable:
		case !i.ha.InRecovery && name == rs.Primary:
			st.Role = dbv1alpha1.RolePrimary
		case i.ha.InRecovery:
			st.Role = dbv1alpha1.RoleReplica
		}
		if i.ha.Reachable && i.ha.InRecovery && i.ha.Upstream == rs.Primary && rs.Primary != "" {
			st.Streaming = true
			if l, ok := lag[name]; ok {
				st.LagBytes = &l
			}
		}
		out = append(out, st)
	}
	return out
}

// replicatingCondition is the Replicating condition of what was observed,
// and of the last step decided.
func replicatingCondition(rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance, last ha.Action, desired int32) *metav1.Condition {
	c := &metav1.Condition{Type: dbv1alpha1.ConditionReplicating, Status: metav1.ConditionFalse}
	primary, exists := instances[rs.Primary]
	switch {
	case rs.TargetPrimary != "":
		// A first primary is no failover.
		c.Reason, c.Message = status.ReasonFailingOver, fmt.Sprintf("making %s the primary", rs.TargetPrimary)
		if rs.Primary == "" {
			c.Reason, c.Message = status.ReasonNoPrimary, fmt.Sprintf("making %s the first primary", rs.TargetPrimary)
		}
		if last.Reason != "" && last.Kind != ha.ActionRecordTarget {
			c.Message += ": " + last.Reason
		}
	case rs.Primary == "":
		c.Reason, c.Message = status.ReasonNoPrimary, "no primary yet"
		if last.Reason != "" {
			c.Message += ": " + last.Reason
		}
	case !exists || !primary.ha.Serving():
		c.Reason = status.ReasonNoPrimary
		c.Message = fmt.Sprintf("the primary %s does not serve", rs.Primary)
		if last.Kind == ha.ActionWait || last.Kind == ha.ActionNone && last.Reason != "" {
			c.Message = last.Reason
		}
	default:
		var lagging []string
		streaming := 0
		for _, name := range sortedNames(instances) {
			if name == rs.Primary {
				continue
			}
			if instances[name].ha.Upstream == rs.Primary {
				streaming++
			} else {
				lagging = append(lagging, name)
			}
		}
		want := int(max(desired-1, 0))
		c.Message = fmt.Sprintf("%s is the primary; %d/%d replicas stream from it", rs.Primary, streaming, want)
		if len(lagging) > 0 || streaming < want {
			c.Reason = status.ReasonReplicasNotStreaming
			if len(lagging) > 0 {
				c.Message += "; not streaming yet: " + strings.Join(lagging, ", ")
			}
			break
		}
		c.Status, c.Reason = metav1.ConditionTrue, status.ReasonStreaming
	}
	return c
}

func sortedNames(instances map[string]*instance) []string {
	out := make([]string, 0, len(instances))
	for name := range instances {
		out = append(out, name)
	}
	sort.Slice(out, func(a, b int) bool {
		ia, ib := instances[out[a]].ha.Ordinal, instances[out[b]].ha.Ordinal
		return ia < ib
	})
	return out
}

// terminating reports whether pod is being deleted and its grace period
// has not run out (its deletionTimestamp is when it should be gone): a pod
// on a node that is gone stays in the API for ever, and is not waited for.
func terminating(pod *corev1.Pod, now time.Time) bool {
	return pod.DeletionTimestamp != nil && now.Before(pod.DeletionTimestamp.Add(5*time.Second))
}

// podReady reports whether pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/ha"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/status"
)

const (
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
	ReasonFailingOver       = "FailingOver"
	ReasonFailoverCalledOff = "FailoverCalledOff"
	ReasonSwitchingOver     = "SwitchingOver"
	ReasonPrimaryChosen     = "PrimaryChosen"
	ReasonPrimaryChanged    = "PrimaryChanged"
	ReasonFenced            = "Fenced"
	ReasonRollingOut        = "RollingOut"
	ReasonDiverged          = "Diverged"
	ReasonReplicaBroken     = "ReplicaBroken"
	ReasonReseeding         = "Reseeding"
)

// brokenRestartAge is how old the pod of a replica that cannot replicate
// (ha.Facts.Broken) must be before the controller restarts it: a pod
// restarted for it, which its start did not cure, is not restarted again
// in a loop, but every brokenRestartAge at most.
const brokenRestartAge = 2 * time.Minute

// divergedPrefix begins what a replicated server's init container says,
// as it ends, when its data held transactions the primary did not have
// (package mysql's init script): the controller reports it.
const divergedPrefix = "diverged: "

// maxDivergences bounds status.replication.divergences.
const maxDivergences = 5

// cachedCredentials are the superuser credentials read from a Database's
// Secret, with the Secret's resourceVersion: the Secret is read again only
// when it changed (or the entry is older than memoryTTL). The informer's
// cache holds no Secret data.
type cachedCredentials struct {
	resourceVersion string
	cred            ha.Credentials
	// database is the database clients connect to.
	database string
	// readOnlyKeys says the Secret was read for a replicated Database,
	// which gave it the read-only Service's keys it lacked
	// (addReadOnlyKeys).
	readOnlyKeys bool
}

// credentials returns the superuser credentials of db, from its Secret.
func (p *pass) credentials(ctx context.Context) (ha.Credentials, error) {
	c, err := p.secretCredentials(ctx)
	return c.cred, err
}

// secretCredentials returns what db's Secret gives clients.
func (p *pass) secretCredentials(ctx context.Context) (cachedCredentials, error) {
	r := p.r
	name := names.SecretName(p.db)
	cached, err := p.read.secret(p.db.Namespace, name)
	if err != nil {
		return cachedCredentials{}, err
	}
	if c, ok := r.creds.Get(cached.UID); ok && c.resourceVersion == cached.ResourceVersion && (c.readOnlyKeys || !p.plan.Replicated) {
		return c, nil
	}
	live, ok := r.takeListed(cached)
	if !ok {
		if live, err = r.kube.CoreV1().Secrets(p.db.Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return cachedCredentials{}, fmt.Errorf("reading the credentials to talk to the servers: %w", err)
		}
	}
	if p.plan.Replicated {
		if live, err = p.addReadOnlyKeys(ctx, live); err != nil {
			return cachedCredentials{}, err
		}
	}
	c := p.credentialsOf(live, p.plan.Replicated)
	r.creds.Put(live.UID, c)
	return c, nil
}

// credentialsOf is what the credentials Secret live gives clients, as
// secretCredentials keeps it; readOnlyKeys says whether it was read after
// the read-only user's keys were added.
func (p *pass) credentialsOf(live *corev1.Secret, readOnlyKeys bool) cachedCredentials {
	return cachedCredentials{resourceVersion: live.ResourceVersion, database: string(live.Data[engine.SecretKeyDatabase]), readOnlyKeys: readOnlyKeys,
		cred: ha.Credentials{User: string(live.Data[engine.SecretKeyUsername]), Password: string(live.Data[engine.SecretKeyPassword]),
			Authorities: p.authoritiesOf(live)}}
}

// instance is one pod of a replicated Database as the pass sees it: the
// pod, what its server answered, and what the decision reads.
type instance struct {
	pod   *corev1.Pod
	facts ha.Facts
	ha    ha.Instance
	// unreachable is why the server of a pod its kubelet reports ready
	// did not answer the controller (the probe's error); nil otherwise.
	unreachable error
}

// replicationFindings is what the replication step found of a replicated
// Database, for its status.
type replicationFindings struct {
	// status and condition are its replication status and Replicating
	// condition.
	status    *dbv1alpha1.ReplicationStatus
	condition *metav1.Condition
	// pollAfter is when to ask its servers again; 0 for no need.
	pollAfter time.Duration
	// stalled is the cause a replica that is not ready waits on when the
	// primary's commits have waited long for acknowledgements; nil while
	// they have not.
	stalled *status.Cause
}

// replicaSet is a replicated Database in one run of the replication step:
// its StatefulSet and the engine's client, and what the step read.
type replicaSet struct {
	p      *pass
	sts    *appsv1.StatefulSet
	client ha.Client
	cred   ha.Credentials
	port   int32
}

// ensureReplication keeps a replicated Database's roles: it asks every
// server what it is, and takes the steps package ha decides, one after the
// other. The target of a failover or switchover is recorded (record, a
// status write) before it is acted on, so that a restart finds it.
func (p *pass) ensureReplication(ctx context.Context, sts *appsv1.StatefulSet, pods []*corev1.Pod,
	record func(context.Context, *replicationFindings) error) (*replicationFindings, error) {
	if !p.plan.Replicated {
		return nil, nil
	}
	logger := klog.FromContext(ctx)
	db := p.db
	rs := &dbv1alpha1.ReplicationStatus{}
	if db.Status.Replication != nil {
		rs = db.Status.Replication.DeepCopy()
	}
	found := &replicationFindings{status: rs, pollAfter: ReplicationPoll}
	client, ok := p.r.replication[db.Spec.Engine]
	if !ok {
		return found, fmt.Errorf("no replication client for engine %s", db.Spec.Engine)
	}
	cred, err := p.credentials(ctx)
	if err != nil {
		return found, err
	}
	s := &replicaSet{p: p, sts: sts, client: client, cred: cred, port: p.plan.Engine.Runtime().Port}
	p.reportDivergences(rs, pods)
	instances := s.probeAll(ctx, pods, rs)
	if err := s.confirmPrimaryPod(ctx, rs, instances); err != nil {
		return found, err
	}
	desired := db.Spec.DesiredReplicas()
	if desired == 0 {
		// Stopping, or stopped: the servers go down on purpose, and the
		// primary stays the primary for when they start again.
		rs.Instances = instanceStatuses(rs, instances)
		found.condition = &metav1.Condition{Type: dbv1alpha1.ConditionReplicating, Status: metav1.ConditionFalse, Reason: status.ReasonStopped,
			Message: "replicas is 0: no server runs"}
		if rs.Primary != "" {
			found.condition.Message += "; " + rs.Primary + " stays the primary"
		}
		found.pollAfter = 0
		return found, nil
	}
	// The rollout's switchover, once only the primary runs an earlier
	// revision of the pods.
	rollout := s.rolloutTarget(rs, instances)

	var last ha.Action
	for step := 0; ; step++ {
		o := s.observation(rs, instances)
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
			case last.Instance == rs.Primary:
				// The failover is called off (ha's callOff).
				reason, kind = ReasonFailoverCalledOff, corev1.EventTypeNormal
			case !primaryLost(rs) || s.handingOver(rs, instances):
				reason, kind = ReasonSwitchingOver, corev1.EventTypeNormal
			}
			found.condition = replicatingCondition(rs, instances, last, desired, s.p.db.Spec.Replication)
			// Recorded before anything is done for it: a controller
			// restarted from here on finishes this failover, not another.
			if err := record(ctx, found); err != nil {
				return found, err
			}
			p.r.recorder.Event(db, kind, reason, last.Reason)
		case ha.ActionUnlabel:
			if err := s.setRole(ctx, target, ""); err != nil {
				return found, err
			}
		case ha.ActionLabel:
			if err := s.setRole(ctx, target, dbv1alpha1.RolePrimary); err != nil {
				return found, err
			}
		case ha.ActionLabelReplica:
			if err := s.setRole(ctx, target, dbv1alpha1.RoleReplica); err != nil {
				return found, err
			}
		case ha.ActionFence:
			if err := client.Fence(ctx, target.pod.Status.PodIP, s.port, cred); err != nil {
				return found, fmt.Errorf("fencing %s: %w", last.Instance, err)
			}
			p.r.recorder.Event(db, corev1.EventTypeNormal, ReasonFenced, last.Reason)
			target.ha.Fenced = true
		case ha.ActionStop:
			if last.Instance == rs.Primary && rs.TargetPrimary == "" {
				// The primary does not serve, and its server runs: it
				// stops, and hands over as it shuts down.
				if err := p.restart(ctx, target, "to hand its role over"); err != nil {
					return found, err
				}
				p.r.recorder.Event(db, corev1.EventTypeWarning, ReasonFailingOver, last.Reason)
			} else if err := p.restart(ctx, target, "to rejoin as a replica"); err != nil {
				return found, err
			}
			target.ha.Reachable, target.ha.Ready, target.ha.Terminating = false, false, true
		case ha.ActionPromote:
			if err := client.Promote(ctx, target.pod.Status.PodIP, s.port, cred); err != nil {
				return found, fmt.Errorf("promoting %s: %w", last.Instance, err)
			}
			s.probe(ctx, target)
		case ha.ActionCompleteTarget:
			was, lost := rs.Primary, rs.PrimaryLostSince != nil
			rs.Primary, rs.TargetPrimary, rs.PrimaryLostSince = last.Instance, "", nil
			if was != "" && was != last.Instance {
				p.r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonPrimaryChanged, "%s is the primary, in place of %s", last.Instance, was)
				if p.r.primaryChanges != nil {
					p.r.primaryChanges.PrimaryChanged(db.Namespace, db.Name, lost)
				}
			}
		}
	}
	if last.Kind == ha.ActionWait && last.After < found.pollAfter {
		found.pollAfter = last.After
	}
	var refused *ha.SynchronousUnsupportedError
	if last.Kind == ha.ActionNone && rs.TargetPrimary == "" {
		if err := s.ensureSynchronous(ctx, rs, instances); errors.As(err, &refused) {
			// Permanent: said in the condition, with a Warning when it
			// first is (status_writer.go). The next look asks again (a
			// login to the primary, no API write): the spec may change.
		} else if err != nil {
			return found, err
		}
		restarted, err := s.restartBroken(ctx, rs, instances)
		if err != nil {
			return found, err
		}
		if !restarted {
			if restarted, err = s.reseedUnstartable(ctx, rs, instances); err != nil {
				return found, err
			}
		}
		if !restarted {
			if err := s.rollOutReplica(ctx, rs, instances); err != nil {
				return found, err
			}
		}
	}
	if rs.TargetPrimary != "" {
		// A failover or switchover goes on: look again soon.
		found.pollAfter = min(found.pollAfter, time.Second)
	}
	rs.Instances = instanceStatuses(rs, instances)
	found.condition = replicatingCondition(rs, instances, last, desired, s.p.db.Spec.Replication)
	if primary, ok := instances[rs.Primary]; ok && primary.facts.Stalled != "" {
		words := stalledWords(rs.Primary, primary.facts, s.p.db.Spec.Replication)
		// The words are the cause's subject: commits that a clone waits
		// for too are news, and worth a Warning, as they do not end by
		// themselves.
		found.stalled = &status.Cause{Reason: status.ReasonCommitsStalled, Subject: words, Message: words, Stuck: primary.facts.CloneWaits}
	}
	if refused != nil {
		found.condition.Status, found.condition.Reason = metav1.ConditionFalse, status.ReasonSynchronousUnsupported
		found.condition.Message = fmt.Sprintf("%s; spec.replication.synchronous is not applied: %s", found.condition.Message, refused.Why)
	}
	return found, nil
}

// synchronousReplicas is how many replicas the primary's commits wait for
// under spec.replication.synchronous (ha.SynchronousReplicas).
func synchronousReplicas(spec *dbv1alpha1.ReplicationSpec, streaming int, desired int32) int32 {
	if spec == nil || spec.Synchronous == nil {
		return 0
	}
	s := spec.Synchronous
	return ha.SynchronousReplicas(s.Number, s.Durability() == dbv1alpha1.DataDurabilityPreferred, streaming, desired)
}

// ensureSynchronous brings the serving primary's synchronous replication
// to what spec.replication.synchronous asks for.
func (s *replicaSet) ensureSynchronous(ctx context.Context, rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) error {
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
	want := synchronousReplicas(s.p.db.Spec.Replication, streaming, s.p.db.Spec.DesiredReplicas())
	if primary.facts.Synchronous == want {
		return nil
	}
	if err := s.client.SetSynchronous(ctx, primary.pod.Status.PodIP, s.port, s.cred, want); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Set synchronous replication", "pod", klog.KObj(primary.pod), "replicas", want)
	primary.facts.Synchronous = want
	return nil
}

// revisionLabel is the label of a StatefulSet's pod that names its revision.
const revisionLabel = "controller-revision-hash"

// outdated reports whether i's pod runs an earlier revision than the
// StatefulSet's update revision.
func (s *replicaSet) outdated(i *instance) bool {
	sts := s.sts
	return sts != nil && sts.Status.UpdateRevision != "" && i.pod.Labels[revisionLabel] != sts.Status.UpdateRevision
}

// settledForRollout reports whether a pod may be restarted for a rollout:
// no failover or switchover is under way, the primary serves, every pod
// that spec.replicas asks for exists and is ready, and every replica
// streams from the primary.
func (s *replicaSet) settledForRollout(rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) bool {
	primary, ok := instances[rs.Primary]
	if rs.TargetPrimary != "" || !ok || !primary.ha.Serving() || int32(len(instances)) != s.p.db.Spec.DesiredReplicas() {
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
func (s *replicaSet) rolloutTarget(rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) string {
	if spec := s.p.db.Spec.Replication; spec != nil && spec.Primary != "" {
		return ""
	}
	primary, ok := instances[rs.Primary]
	if !ok || !s.outdated(primary) || !s.settledForRollout(rs, instances) {
		return ""
	}
	var best *instance
	for _, name := range sortedNames(instances) {
		i := instances[name]
		if name == rs.Primary {
			continue
		}
		if s.outdated(i) {
			return ""
		}
		if best == nil || i.ha.Received > best.ha.Received {
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
func (s *replicaSet) rollOutReplica(ctx context.Context, rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) error {
	primary, ok := instances[rs.Primary]
	if !ok || !primary.ha.Serving() {
		return nil
	}
	if s.outdated(primary) && !madeToReplicate(primary.pod) {
		// A single server scaled up into a replicated Database: its pod
		// was made without the replication init container, so it grants
		// no replication access and writes no change log a replica can
		// follow. No replica can clone from it, let alone take over, until
		// it runs the new revision: it restarts in place, first.
		return s.restartForRollout(ctx, primary)
	}
	if !s.settledForRollout(rs, instances) {
		return nil
	}
	names := sortedNames(instances)
	var victim *instance
	for k := len(names) - 1; k >= 0; k-- {
		if i := instances[names[k]]; names[k] != rs.Primary && s.outdated(i) {
			victim = i
			break
		}
	}
	if victim == nil {
		primary := instances[rs.Primary]
		if !s.outdated(primary) || (len(instances) > 1 && s.rolloutTarget(rs, instances) != "") {
			return nil
		}
		victim = primary
	}
	return s.restartForRollout(ctx, victim)
}

// restartBroken restarts the first replica, by name, that says it cannot
// replicate from the serving primary until it rejoins or is seeded again
// (ha.Facts.Broken), once its pod is brokenRestartAge old: as it starts,
// its init container rejoins it to the primary, or seeds it again (when
// the primary purged what it lacks), or sets its data aside, reported, and
// seeds it again (when it diverged). It reports whether it restarted one.
func (s *replicaSet) restartBroken(ctx context.Context, rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) (bool, error) {
	primary, ok := instances[rs.Primary]
	if !ok || !primary.ha.Serving() {
		return false, nil
	}
	for _, name := range sortedNames(instances) {
		i := instances[name]
		if name == rs.Primary || !i.ha.Reachable || i.facts.Broken == "" ||
			s.p.r.clock.Since(i.pod.CreationTimestamp.Time) < brokenRestartAge {
			continue
		}
		if _, done := s.p.r.restarted.Get(i.pod.UID); done {
			// Restarted already: the caches have not shown it yet. (Seen
			// in CI: two ReplicaBroken Warnings for one restart.)
			continue
		}
		if err := s.p.restart(ctx, i, "that cannot replicate"); err != nil {
			return false, err
		}
		s.p.r.restarted.Put(i.pod.UID, struct{}{})
		klog.FromContext(ctx).Info("Restarting a replica that cannot replicate", "pod", klog.KObj(i.pod), "why", i.facts.Broken)
		s.p.r.recorder.Eventf(s.p.db, corev1.EventTypeWarning, ReasonReplicaBroken,
			"Restarting %s: it cannot replicate from %s (%s); as it starts, it rejoins, or is seeded again from %s", name, rs.Primary, i.facts.Broken, rs.Primary)
		return true, nil
	}
	return false, nil
}

// reseedAfterCrashes is how many times in a row a replica's server must
// have failed to start before the controller seeds it again.
const reseedAfterCrashes = 3

// reseedUnstartable seeds again from the primary the first replica, by
// name, whose data cannot start: its server failed to start
// reseedAfterCrashes times in a row (unstartable), while the primary
// serves and runs the same revision of the pods (so the data is at fault,
// not the pods' spec). It
// deletes the replica's data volume claim, then its pod: the StatefulSet
// makes both again, and the new pod clones the primary's data. Never the
// primary, whose data is the one copy a clone comes from; never without a
// Warning that names the claim and the volume discarded, and why. It
// reports whether it seeded one again.
func (s *replicaSet) reseedUnstartable(ctx context.Context, rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) (bool, error) {
	primary, ok := instances[rs.Primary]
	if !ok || !primary.ha.Serving() {
		return false, nil
	}
	claims, err := s.p.read.ownClaims(s.p.db)
	if err != nil {
		return false, err
	}
	for _, name := range sortedNames(instances) {
		i := instances[name]
		if name == rs.Primary || i.ha.Reachable || i.pod.DeletionTimestamp != nil || i.pod.Labels[revisionLabel] != primary.pod.Labels[revisionLabel] {
			continue
		}
		crashed := unstartable(i.pod, s.p.plan.Engine.Name())
		if crashed == nil {
			continue
		}
		claimName := names.DataVolume + "-" + name
		idx := slices.IndexFunc(claims, func(c *corev1.PersistentVolumeClaim) bool { return c.Name == claimName })
		if idx < 0 {
			continue
		}
		claim := claims[idx]
		if _, done := s.p.r.restarted.Get(i.pod.UID); done {
			// Seeded again already: the caches have not shown it yet.
			continue
		}
		// A claim deleted already waits for its pod to go (a pass that
		// failed to delete the pod, or a cache behind): only the pod's
		// delete is left.
		if claim.DeletionTimestamp == nil {
			volume := claim.Spec.VolumeName
			if volume == "" {
				volume = "none bound"
			}
			s.p.r.recorder.Eventf(s.p.db, corev1.EventTypeWarning, ReasonReseeding,
				"Seeding %s again from %s: its server failed to start %d times in a row, while %s runs the same pods, and last ended with %s. Its data volume claim %s (volume %s) is deleted, with its data unless the volume's reclaim policy keeps it",
				name, rs.Primary, reseedAfterCrashes, rs.Primary, status.DescribeExit(crashed), claimName, volume)
			klog.FromContext(ctx).Info("Seeding a replica whose data cannot start again", "pod", klog.KObj(i.pod), "claim", claimName, "volume", volume)
			uid := claim.UID
			if err := s.p.r.kube.CoreV1().PersistentVolumeClaims(claim.Namespace).Delete(ctx, claimName,
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
				return false, fmt.Errorf("deleting the data volume claim %s of %s to seed it again: %w", claimName, name, err)
			}
		}
		if err := s.p.restart(ctx, i, "to seed it again"); err != nil {
			return false, err
		}
		s.p.r.restarted.Put(i.pod.UID, struct{}{})
		return true, nil
	}
	return false, nil
}

// unstartable is how the container named server of pod last ended, when
// it fails to start: restarted reseedAfterCrashes times or more, not
// started since (its startup probe never passed), its last run shorter
// than status.CrashLoopReset and ended by an error of its own, not by the
// kernel for want of memory. nil otherwise.
func unstartable(pod *corev1.Pod, server string) *corev1.ContainerStateTerminated {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != server {
			continue
		}
		last := cs.LastTerminationState.Terminated
		if cs.Ready || (cs.Started != nil && *cs.Started) || cs.RestartCount < reseedAfterCrashes ||
			last == nil || last.ExitCode == 0 || last.Reason == "OOMKilled" ||
			last.FinishedAt.Sub(last.StartedAt.Time) >= status.CrashLoopReset {
			return nil
		}
		return last
	}
	return nil
}

// madeToReplicate reports whether pod was made to be a member of a
// replicated Database: it ran the replication init container. Whether a
// primary of an earlier revision must restart in place is read from its
// pod, never from one look at its replicas: on a busy machine a replica
// the rollout just restarted, and another whose server did not answer in
// time, looked like replicas that cannot take over, and the primary was
// restarted in place, second, while they came back, and an unplanned
// failover followed (seen here with MySQL; likely CI's PostgreSQL
// failures, one of which lost an acknowledged write).
func madeToReplicate(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Status.InitContainerStatuses, func(cs corev1.ContainerStatus) bool { return cs.Name == builder.ReplicationContainer })
}

// restartForRollout restarts victim at the StatefulSet's update revision.
func (s *replicaSet) restartForRollout(ctx context.Context, victim *instance) error {
	if err := s.p.restart(ctx, victim, "at the StatefulSet's update revision"); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Rolling out", "pod", klog.KObj(victim.pod), "revision", s.sts.Status.UpdateRevision)
	s.p.r.recorder.Eventf(s.p.db, corev1.EventTypeNormal, ReasonRollingOut, "Restarting %s at the new revision of the pods", victim.pod.Name)
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

// handingOver reports whether the recorded primary's pod is being deleted
// and its engine hands over as it shuts down: it no longer serves, but
// goes on purpose (a switchover, not a failover).
func (s *replicaSet) handingOver(rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) bool {
	i, ok := instances[rs.Primary]
	return ok && i.ha.Terminating && s.p.plan.Engine.Runtime().Replication.ShutdownSendsAll
}

// observation is what the decision reads, and keeps the time the primary
// was first seen not serving.
func (s *replicaSet) observation(rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) ha.Observation {
	db := s.p.db
	now := s.p.r.clock.Now()
	o := ha.Observation{Now: now, Primary: rs.Primary, Target: rs.TargetPrimary, FailoverDelay: db.Spec.FailoverDelay(), Terms: s.client.Terms(),
		ShutdownSendsAll: s.p.plan.Engine.Runtime().Replication.ShutdownSendsAll}
	for _, name := range sortedNames(instances) {
		o.Instances = append(o.Instances, instances[name].ha)
	}
	if spec := db.Spec.Replication; spec != nil {
		o.Requested = spec.Primary
	}
	if want := db.Spec.DesiredReplicas(); want > 0 && o.Requested == "" {
		// Scaling down below the primary: move the role to the first pod.
		if ordinal, ok := names.Ordinal(db, rs.Primary); ok && int32(ordinal) >= want {
			o.Requested = names.PodName(db, 0)
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

// reportDivergences records, once per pod, a former primary whose data
// was set aside and cloned again because it held transactions the primary
// did not have: in the status (the last maxDivergences) and in a Warning.
func (p *pass) reportDivergences(rs *dbv1alpha1.ReplicationStatus, pods []*corev1.Pod) {
	for _, pod := range pods {
		msg := divergence(pod)
		if msg == "" || slices.ContainsFunc(rs.Divergences, func(d dbv1alpha1.Divergence) bool { return d.PodUID == pod.UID }) {
			continue
		}
		rs.Divergences = append(rs.Divergences, dbv1alpha1.Divergence{Instance: pod.Name, PodUID: pod.UID,
			Time: metav1.NewTime(p.r.clock.Now()), Message: msg})
		if n := len(rs.Divergences); n > maxDivergences {
			rs.Divergences = slices.Clone(rs.Divergences[n-maxDivergences:])
		}
		p.r.recorder.Event(p.db, corev1.EventTypeWarning, ReasonDiverged, msg)
	}
}

// divergence is what pod's replication init container said of a
// divergence as it ended, "" when it said none.
func divergence(pod *corev1.Pod) string {
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.Name != builder.ReplicationContainer {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t != nil && strings.HasPrefix(t.Message, divergedPrefix) {
				return strings.TrimSpace(strings.TrimPrefix(t.Message, divergedPrefix))
			}
		}
	}
	return ""
}

// probeAll asks the server of every pod of pods, at once, what it is. rs
// is the replication status as last written: which replicas streamed.
func (s *replicaSet) probeAll(ctx context.Context, pods []*corev1.Pod, rs *dbv1alpha1.ReplicationStatus) map[string]*instance {
	instances := map[string]*instance{}
	var wg sync.WaitGroup
	now := s.p.r.clock.Now()
	for _, pod := range pods {
		ordinal, ok := names.Ordinal(s.p.db, pod.Name)
		if !ok {
			continue
		}
		i := &instance{pod: pod, ha: ha.Instance{Name: pod.Name, Ordinal: ordinal, Role: ha.Role(pod.Labels[dbv1alpha1.LabelRole]),
			Ready: podReady(pod) && pod.DeletionTimestamp == nil, Terminating: terminating(pod, now),
			Running: pod.DeletionTimestamp == nil && serverRunning(pod, s.p.plan.Engine.Name()), Created: pod.CreationTimestamp.Time,
			Cordoned: s.p.read.cordoned(pod.Spec.NodeName), StreamedLast: streamedLast(rs, pod.Name)}}
		instances[pod.Name] = i
		wg.Go(func() { s.probe(ctx, i) })
	}
	wg.Wait()
	// A replica streams from the primary when the primary says so.
	for _, i := range instances {
		if !i.ha.Reachable || i.ha.Replica {
			continue
		}
		for _, st := range i.facts.Standbys {
			if r, ok := instances[st.Name]; ok && st.Streaming && r.ha.Replica {
				r.ha.Upstream = i.ha.Name
			}
		}
	}
	// A replica that does not stream from the primary because it diverged
	// from the primary's history cannot until it is rewound; its server
	// does not say so (PostgreSQL), the timelines do.
	if primary, ok := instances[rs.Primary]; ok && primary.ha.Reachable && !primary.ha.Replica {
		for _, i := range instances {
			if i.ha.Reachable && i.ha.Replica && i.ha.Upstream != primary.ha.Name && i.facts.Broken == "" {
				i.facts.Broken = ha.Diverged(primary.facts, i.facts, s.client.Terms())
			}
		}
	}
	return instances
}

// confirmPrimaryPod reads the primary's pod from the API server when its
// server does not answer though the cache has its pod ready and not being
// deleted. A pod deleted a moment ago shuts its server down before the
// cache shows the deletion; a failover decided then promotes a replica
// before the old primary has sent its last WAL to the others, and a
// replica that receives it after the promotion has diverged from the new
// primary (seen in CI, with failoverDelaySeconds 0: the other replica got
// the old primary's shutdown checkpoint 18 ms after the promotion). Read
// live, a pod being deleted is handed over from as it shuts down, as it
// would be had the cache been current; so is a switchover's old primary,
// stopped by the pass before, whose shutdown must end before the target is
// promoted. One read, only while the cache and the server disagree.
func (s *replicaSet) confirmPrimaryPod(ctx context.Context, rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) error {
	i, ok := instances[rs.Primary]
	if !ok || i.ha.Reachable || !i.ha.Ready {
		return nil
	}
	live, err := s.p.r.kube.CoreV1().Pods(i.pod.Namespace).Get(ctx, i.pod.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading the pod of the primary %s, whose server does not answer: %w", i.pod.Name, err)
	case live.UID != i.pod.UID || live.DeletionTimestamp == nil:
		return nil
	}
	klog.FromContext(ctx).V(2).Info("The primary's pod is being deleted; the cache does not show it yet", "pod", klog.KObj(live))
	i.pod = live
	i.ha.Ready, i.ha.Terminating = false, terminating(live, s.p.r.clock.Now())
	return nil
}

// stranded reports whether the primary's node is cordoned, no other pod
// of the Database runs on a node that is not, and every other pod is
// ready (plan.Observed.Stranded).
func (p *pass) stranded(pods []*corev1.Pod) bool {
	rs := p.db.Status.Replication
	if rs == nil || rs.Primary == "" {
		return false
	}
	var primary *corev1.Pod
	for _, pod := range pods {
		if pod.Name == rs.Primary {
			primary = pod
		}
	}
	if primary == nil || !p.read.cordoned(primary.Spec.NodeName) {
		return false
	}
	for _, pod := range pods {
		if pod != primary && (!podReady(pod) || !p.read.cordoned(pod.Spec.NodeName)) {
			return false
		}
	}
	return true
}

// streamedLast reports whether rs, the status as last written, says the
// replica name streamed from the primary.
func streamedLast(rs *dbv1alpha1.ReplicationStatus, name string) bool {
	for _, st := range rs.Instances {
		if st.Name == name {
			return st.Streaming
		}
	}
	return false
}

// probe asks i's server what it is; a server that does not answer, or
// answers as another pod, is not reachable.
func (s *replicaSet) probe(ctx context.Context, i *instance) {
	i.ha.Reachable, i.ha.NoAnswer, i.unreachable = false, "", nil
	if i.pod.Status.PodIP == "" || i.pod.DeletionTimestamp != nil {
		return
	}
	facts, err := s.client.Probe(ctx, i.pod.Status.PodIP, s.port, s.cred)
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Server does not answer", "pod", klog.KObj(i.pod), "err", err)
		i.ha.NoAnswer = err.Error()
		if podReady(i.pod) {
			i.unreachable = err
		}
		return
	}
	if facts.Name != "" && facts.Name != i.pod.Name {
		// The address is another pod's now: a stale cache.
		return
	}
	i.facts = facts
	i.ha = ha.Observe(i.ha, facts)
}

// podReplaced reports whether err refused a write to a pod because the pod
// the write named by its UID is gone: deleted, or replaced by another of
// the same name, whose UID the API server will not let the write change.
func podReplaced(err error) bool {
	if apierrors.IsNotFound(err) {
		return true
	}
	var st apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &st) || st.Status().Details == nil {
		return false
	}
	for _, c := range st.Status().Details.Causes {
		if c.Field == "metadata.uid" {
			return true
		}
	}
	return false
}

// setRole sets (or with "" removes) the role label of i's pod, on the pod
// the decision was made on (its UID), and records it for the next step.
func (s *replicaSet) setRole(ctx context.Context, i *instance, role string) error {
	var value any
	if role != "" {
		value = role
	}
	if err := s.p.r.patchPodMetadata(ctx, i.pod, "labels", map[string]any{dbv1alpha1.LabelRole: value}); err != nil {
		if podReplaced(err) {
			// The pod's delete, and its successor's create, bring the
			// Database back, to decide again on the pod as it is.
			return &WaitingError{Kind: "Pod", Name: i.pod.Name, Replaced: true}
		}
		return fmt.Errorf("setting the role label of %s: %w", i.pod.Name, err)
	}
	i.ha.Role = ha.Role(role)
	return nil
}

// instanceStatuses reports each pod in the status, by name.
func instanceStatuses(rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance) []dbv1alpha1.InstanceStatus {
	lag := map[string]*int64{}
	if pr, ok := instances[rs.Primary]; ok && pr.ha.Reachable && !pr.ha.Replica {
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
		case !i.ha.Replica && name == rs.Primary:
			st.Role = dbv1alpha1.RolePrimary
		case i.ha.Replica:
			st.Role = dbv1alpha1.RoleReplica
		}
		if i.ha.Reachable && i.ha.Replica && i.ha.Upstream == rs.Primary && rs.Primary != "" {
			st.Streaming = true
			if l := lag[name]; l != nil {
				st.LagBytes = ptr.To(*l)
			}
		}
		out = append(out, st)
	}
	return out
}

// replicatingCondition is the Replicating condition of what was observed,
// and of the last step decided. spec (the Database's spec.replication)
// says what holds commits the primary reports stalled.
func replicatingCondition(rs *dbv1alpha1.ReplicationStatus, instances map[string]*instance, last ha.Action, desired int32, spec *dbv1alpha1.ReplicationSpec) *metav1.Condition {
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
		if target, ok := instances[rs.TargetPrimary]; ok && target.unreachable != nil {
			c.Reason = status.ReasonServersUnreachable
			c.Message += fmt.Sprintf(": the controller cannot reach %s, which its kubelet reports ready: %v", rs.TargetPrimary, target.unreachable)
		}
	case rs.Primary == "":
		c.Reason, c.Message = status.ReasonNoPrimary, "no primary yet"
		if last.Reason != "" {
			c.Message += ": " + last.Reason
		}
	case exists && primary.unreachable != nil:
		c.Reason = status.ReasonServersUnreachable
		c.Message = fmt.Sprintf("the controller cannot reach the primary %s, which its kubelet reports ready: %v", rs.Primary, primary.unreachable)
		if last.Kind == ha.ActionWait || last.Kind == ha.ActionNone && last.Reason != "" {
			c.Message += "; " + last.Reason
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
			if i := instances[name]; i.ha.Upstream == rs.Primary {
				streaming++
			} else if i.facts.Broken != "" {
				lagging = append(lagging, fmt.Sprintf("%s (it cannot replicate: %s)", name, i.facts.Broken))
			} else if i.unreachable != nil {
				lagging = append(lagging, fmt.Sprintf("%s (the controller cannot reach it: %v)", name, i.unreachable))
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
		}
		if primary.facts.Stalled != "" {
			c.Message += "; " + stalledWords(rs.Primary, primary.facts, spec)
		}
		if c.Reason == status.ReasonReplicasNotStreaming {
			break
		}
		c.Status, c.Reason = metav1.ConditionTrue, status.ReasonStreaming
	}
	return c
}

// stalledWords say that the commits of the primary (its facts) have waited
// long for acknowledgements, in the server's words, and, under spec's
// dataDurability Required, what holds them and what would let them go on.
func stalledWords(primary string, facts ha.Facts, spec *dbv1alpha1.ReplicationSpec) string {
	words := fmt.Sprintf("on %s, %s", primary, facts.Stalled)
	if spec != nil && spec.Synchronous != nil && spec.Synchronous.Durability() == dbv1alpha1.DataDurabilityRequired {
		// Preferred lets the primary commit without them while too few
		// stream (synchronousReplicas).
		words += " (dataDurability Required holds each commit until enough replicas have it; Preferred lets commits go on while too few replicas stream)"
	}
	return words
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

// serverRunning reports whether pod's kubelet last reported the server's
// container, named server, running.
func serverRunning(pod *corev1.Pod, server string) bool {
	return slices.ContainsFunc(pod.Status.ContainerStatuses, func(cs corev1.ContainerStatus) bool {
		return cs.Name == server && cs.State.Running != nil
	})
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

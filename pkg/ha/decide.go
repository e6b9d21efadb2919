// Package ha decides the next step of a replicated Database's high
// availability from what the controller observed of its instances: nothing,
// label the primary, fail over to the most advanced replica, switch over to
// a replica a person named, off a cordoned node, or from a primary whose
// pod is being deleted, bring back a former primary as a replica, or call
// a failover off when the old primary is back with changes the target
// cannot receive.
//
// It is pure: Next reads an Observation and returns one Action, and does no
// I/O. The controller records the target of a failover or a switchover in
// the Database's status before it acts on it (ActionRecordTarget), so that a
// controller restarted in the middle of one observes the same target and
// finishes the same failover. Each other action is idempotent: done twice,
// it leaves the instances as done once.
//
// The order of the steps of a failover is the one that keeps a client
// Service from ever routing writes to two servers: the primary role label
// leaves the old primary (and the Service with it) before anything is
// promoted, and is given to the new primary only once it has left recovery.
package ha

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Role is the role label of an instance's pod.
type Role string

const (
	RolePrimary Role = "primary"
	RoleReplica Role = "replica"
	RoleNone    Role = ""
)

// Instance is what the controller observed of one instance: its pod, and
// over the engine's Client, its server.
type Instance struct {
	// Name is the pod's name; Ordinal its StatefulSet ordinal.
	Name    string
	Ordinal int
	// Role is the role label the pod carries now.
	Role Role
	// Ready is the pod's Ready condition.
	Ready bool
	// Terminating says the pod is being deleted and its grace period has
	// not run out: its server is shutting down, and sends the changes it
	// wrote to its replicas before it stops.
	Terminating bool
	// Cordoned says the pod's node is cordoned (unschedulable): it is
	// being drained, or is about to be, and its pods evicted.
	Cordoned bool
	// StreamedLast says the last look at the Database, while its primary
	// answered, saw this replica stream from it: what a handover goes by
	// once the primary's pod is being deleted and its server no longer
	// says which replicas it sends changes to.
	StreamedLast bool
	// NoAnswer is, when the server did not answer, the controller's
	// check's error, for a person ("" when unknown).
	NoAnswer string
	// Running says its pod is not being deleted and its kubelet last
	// reported its server's container running: a server that does not
	// answer the controller may still answer its clients. Created is when
	// its pod was made.
	Running bool
	Created time.Time
	// Reachable says the server answered; the fields below are known only then.
	Reachable bool
	// Replica says the server applies another's changes and writes none of
	// its own (PostgreSQL: pg_is_in_recovery()).
	Replica bool
	// Received and Applied are, for a replica, the position in the
	// primary's change log up to which it has received changes, and
	// applied them; Written is, for a server that is no replica, the
	// position it has written up to (see Facts).
	Received, Applied, Written uint64
	// Upstream is the instance that streams changes to it, as that
	// instance's list of standbys says ("" when none does).
	Upstream string
	// Fenced says the controller fenced the server (ActionFence): it
	// refuses writes, and rejoins as a replica at its next start.
	Fenced bool
	// FenceHolds is the server's Facts.FenceHolds: fenced, it accepts no
	// write while it runs, so the target is promoted once it has received
	// all that server wrote, and the server restarts after, to rejoin (its
	// shutdown is no longer in the way of the failover). Otherwise it
	// stops, and its shutdown ends, first.
	FenceHolds bool
}

// Serving reports whether the instance serves as a primary: its pod is
// ready and its server answers as no replica.
func (i Instance) Serving() bool { return i.Ready && i.Reachable && !i.Replica }

// Observation is the input of Next.
type Observation struct {
	Now time.Time
	// Instances observed, one per pod that exists.
	Instances []Instance
	// Primary is status.primary: the instance the controller last made
	// primary, "" before the first.
	Primary string
	// Target is status.targetPrimary: the instance a failover or switchover
	// in progress makes primary, "" when none is.
	Target string
	// PrimaryLostSince is when the controller first saw Primary not
	// serving, zero while it serves.
	PrimaryLostSince time.Time
	// Requested is the instance a person asked to be primary
	// (spec.replication.primary), "" for any.
	Requested string
	// FailoverDelay is how long Primary may not serve before a failover.
	FailoverDelay time.Duration
	// Terms are the engine's words for its change log, in Reasons.
	Terms Terms
	// ShutdownSendsAll says the engine's clean shutdown of a primary sends
	// all it wrote to the replicas that stream from it: a primary whose pod
	// is being deleted hands over at once. Otherwise it is waited for,
	// as a primary that does not serve.
	ShutdownSendsAll bool
}

// Kind is what an Action does.
type Kind string

const (
	// ActionNone: nothing to do; Reason may say what is waited for.
	ActionNone Kind = "None"
	// ActionWait: look again after Action.After.
	ActionWait Kind = "Wait"
	// ActionRecordTarget: write Action.Instance as status.targetPrimary, and
	// nothing else; the next steps read it back.
	ActionRecordTarget Kind = "RecordTarget"
	// ActionUnlabel: remove the primary role label from Action.Instance, so
	// that the client Service stops routing to it.
	ActionUnlabel Kind = "Unlabel"
	// ActionFence: stop Action.Instance from serving writes (it is a former
	// primary that still runs out of recovery): it refuses writes from now
	// on, its sessions end, and it is marked to rejoin as a replica at its
	// next start, rewound, or cloned again if it cannot be.
	ActionFence Kind = "Fence"
	// ActionStop: restart the fenced Action.Instance, so that it rejoins
	// as a replica (its pod is deleted; the StatefulSet makes it again).
	ActionStop Kind = "Stop"
	// ActionPromote: promote Action.Instance (pg_promote()).
	ActionPromote Kind = "Promote"
	// ActionLabel: give Action.Instance the primary role label.
	ActionLabel Kind = "Label"
	// ActionCompleteTarget: status.primary becomes the target, and the
	// target is cleared.
	ActionCompleteTarget Kind = "CompleteTarget"
	// ActionLabelReplica: give Action.Instance the replica role label.
	ActionLabelReplica Kind = "LabelReplica"
)

// Action is the next step.
type Action struct {
	Kind     Kind
	Instance string
	// After is how long to wait, for ActionWait.
	After time.Duration
	// Reason says why, in words for a person (status and events).
	Reason string
}

// Next returns the next step for o.
func Next(o Observation) Action {
	byName := map[string]Instance{}
	for _, i := range o.Instances {
		byName[i.Name] = i
	}
	if len(o.Instances) == 0 {
		return Action{Kind: ActionNone, Reason: "no instance exists"}
	}
	if o.Target != "" {
		return toTarget(o, byName)
	}
	if o.Primary == "" {
		return bootstrap(o)
	}
	primary, exists := byName[o.Primary]
	switch {
	case exists && primary.Serving():
		return steady(o, primary)
	case exists && primary.Reachable && primary.Replica:
		// Never made a replica by the controller: a person did this. Its
		// replicas cannot follow it; choose again.
		return failover(o, fmt.Sprintf("primary %s is in recovery", o.Primary))
	}
	lost := o.Now.Sub(o.PrimaryLostSince)
	if o.PrimaryLostSince.IsZero() {
		lost = 0
	}
	if exists && primary.Terminating {
		// Deleted on purpose (kubectl delete pod, an eviction, a drain):
		// hand over at once, as its shutdown sends its last changes,
		// rather than wait for the pod to come back. An engine whose
		// shutdown may end before its replicas have it all (MySQL's
		// asynchronous replication) is waited for.
		if to, ok := successor(o, primary); ok && o.ShutdownSendsAll {
			return Action{Kind: ActionRecordTarget, Instance: to.Name,
				Reason: fmt.Sprintf("the pod of the primary %s is being deleted; switching over to %s, the replica streaming from it with the most %s received, as it shuts down", primary.Name, to.Name, o.Terms.log())}
		}
		return waitShutdown(o)
	}
	if exists && primary.Reachable && !primary.Replica {
		return unready(o, primary, lost)
	}
	if lost < o.FailoverDelay {
		return Action{Kind: ActionWait, After: o.FailoverDelay - lost,
			Reason: fmt.Sprintf("primary %s does not serve; failing over if it does not serve again within %s", o.Primary, o.FailoverDelay)}
	}
	why := fmt.Sprintf("primary %s has not served for %s (%s)", o.Primary, lost.Round(time.Second), notServing(primary, exists))
	if exists && stoppable(o, primary) {
		return stop(o, why)
	}
	return failover(o, why)
}

// stoppable reports whether primary, which does not serve, is stopped
// rather than failed over from: its server still runs, so it may still
// take writes from clients that reach it (its clients' connections, or a
// Service whose endpoints lag), and a replica promoted beside it would
// lose them (seen in CI: a primary that did not answer the controller
// within 3 s for 71 s on a starved node, a replica promoted, the old
// primary fenced 3 s later, 3 acknowledged writes lost). Stopped, it
// ends its sessions and, where the engine's clean shutdown sends all it
// wrote to its replicas (ShutdownSendsAll), the role is handed over as it
// shuts down, as for any primary whose pod is deleted. Once per pod: a
// pod made since the primary was first seen not serving is failed over
// from.
func stoppable(o Observation, primary Instance) bool {
	return o.ShutdownSendsAll && primary.Running && !o.PrimaryLostSince.IsZero() && primary.Created.Before(o.PrimaryLostSince)
}

// stop is ActionStop of the primary that does not serve.
func stop(o Observation, why string) Action {
	return Action{Kind: ActionStop, Instance: o.Primary,
		Reason: why + "; its server still runs: it is stopped, so that it takes no more writes and hands its role over as it shuts down"}
}

// notServing says, for a person, why primary does not serve: what the
// failover that follows went by.
func notServing(primary Instance, exists bool) string {
	if !exists {
		return "its pod does not exist"
	}
	pod := "its pod is ready"
	if !primary.Ready {
		pod = "its pod is not ready"
	}
	if primary.NoAnswer == "" {
		return pod + ", and its server does not answer"
	}
	return pod + ", and its server does not answer: " + primary.NoAnswer
}

// UnreadyFailoverDelay is how long a primary whose server answers the
// controller as the primary, but whose pod is not ready, is waited for
// before a failover, when the Database's failover delay is shorter.
const UnreadyFailoverDelay = 2 * time.Minute

// unready is the next step for a primary whose server answers the
// controller as the primary while its pod is not ready: its readiness
// probe (a login run in the pod, every 10 s) failed three times in a row.
// On a busy node that is most often a probe that did not finish in time,
// and a failover cures nothing there: the replicas run on the same nodes,
// and the failover itself stops writes. (Seen in CI: a primary restarting,
// and one promoted 3 s before, were each failed over from, and each still
// accepted writes when it was fenced a second later; the second failover
// left a replica that never came back.) So it is waited for longer:
// failoverDelay, and at least UnreadyFailoverDelay, for a kubelet that no
// longer reports (its node lost to the control plane, the server still
// running). A server that does not answer the controller is failed over
// from after failoverDelay, as before.
func unready(o Observation, primary Instance, lost time.Duration) Action {
	delay := max(o.FailoverDelay, UnreadyFailoverDelay)
	if lost >= delay {
		why := fmt.Sprintf("primary %s answers, but its pod has not been ready for %s", o.Primary, lost.Round(time.Second))
		if stoppable(o, primary) {
			return stop(o, why)
		}
		return failover(o, why)
	}
	if a := steady(o, primary); a.Kind != ActionNone {
		return a
	}
	return Action{Kind: ActionWait, After: delay - lost,
		Reason: fmt.Sprintf("primary %s answers, but its pod is not ready; failing over if it is not ready again within %s", o.Primary, delay)}
}

// bootstrap makes the first primary: the one instance out of recovery, or
// else the lowest ordinal, which initialises the data.
func bootstrap(o Observation) Action {
	for _, i := range o.Instances {
		if i.Reachable && !i.Replica {
			return Action{Kind: ActionRecordTarget, Instance: i.Name, Reason: "first primary: " + i.Name + " runs out of recovery"}
		}
	}
	first := slices.MinFunc(o.Instances, func(a, b Instance) int { return cmp.Compare(a.Ordinal, b.Ordinal) })
	return Action{Kind: ActionRecordTarget, Instance: first.Name, Reason: "first primary: " + first.Name + " initialises the data"}
}

// failover records the most advanced replica as the target.
func failover(o Observation, why string) Action {
	var best *Instance
	for k := range o.Instances {
		c := &o.Instances[k]
		if c.Name == o.Primary || !c.Reachable || !c.Replica {
			continue
		}
		if best == nil || moreAdvanced(*c, *best) {
			best = c
		}
	}
	if best == nil {
		return Action{Kind: ActionNone, Reason: why + ", and no replica answers to be promoted"}
	}
	return Action{Kind: ActionRecordTarget, Instance: best.Name, Reason: why + "; failing over to " + best.Name + ", the replica with the most " + o.Terms.log() + " received"}
}

// moreAdvanced orders candidates: most changes received, then applied, then
// the lower ordinal, so that the choice is stable.
func moreAdvanced(a, b Instance) bool {
	if a.Received != b.Received {
		return a.Received > b.Received
	}
	if a.Applied != b.Applied {
		return a.Applied > b.Applied
	}
	return a.Ordinal < b.Ordinal
}

// toTarget is the next step of a failover or switchover to o.Target, in the
// order that never lets two instances serve writes under the label.
func toTarget(o Observation, byName map[string]Instance) Action {
	target, exists := byName[o.Target]
	if !exists {
		return Action{Kind: ActionNone, Reason: "the new primary " + o.Target + " does not exist"}
	}
	// 0. A failover's old primary that answers again before the target is
	// promoted, with changes the target can never receive, stays the
	// primary (see callOff).
	if old, exists := byName[o.Primary]; exists && callOff(o, old, target) {
		return Action{Kind: ActionRecordTarget, Instance: old.Name,
			Reason: fmt.Sprintf("%s answers again as the primary before %s was promoted, having written %s up to %s, which %s has not received (up to %s) and does not stream from it: the failover is called off, and %s stays the primary",
				old.Name, o.Target, o.Terms.log(), o.Terms.position(old.Written), o.Target, o.Terms.position(target.Received), old.Name)}
	}
	// 1. The label leaves every other instance first.
	for _, i := range sortedByOrdinal(o.Instances) {
		if i.Name != o.Target && i.Role == RolePrimary {
			return Action{Kind: ActionUnlabel, Instance: i.Name, Reason: "removing the primary role from " + i.Name + " before " + o.Target + " is promoted"}
		}
	}
	// 2. No other instance may still accept writes: a switchover's old
	// primary, or one that came back. It is fenced; a switchover's old
	// primary then stops once the target has received all the changes it
	// wrote, so that no acknowledged write is lost. Where the fence holds,
	// the target is promoted once it has them, and the fenced server
	// stops after.
	for _, i := range sortedByOrdinal(o.Instances) {
		if i.Name == o.Target || !i.Reachable || i.Replica {
			continue
		}
		switch {
		case !i.Fenced:
			return Action{Kind: ActionFence, Instance: i.Name, Reason: i.Name + " still accepts writes; it is fenced before " + o.Target + " is promoted"}
		case i.Name == o.Primary && target.Reachable && target.Replica && target.Received < i.Written:
			return Action{Kind: ActionWait, After: time.Second, Reason: fmt.Sprintf("waiting for %s to receive the %s of %s up to %s before it is promoted", o.Target, o.Terms.log(), i.Name, o.Terms.position(i.Written))}
		case i.FenceHolds:
			// It writes nothing more; steady stops it once the target
			// is the primary.
			continue
		}
		return Action{Kind: ActionStop, Instance: i.Name, Reason: i.Name + " is fenced; it restarts to rejoin as a replica"}
	}
	if old, exists := byName[o.Primary]; exists && old.Name != o.Target && old.Terminating {
		return waitShutdown(o)
	}
	if !target.Reachable {
		return Action{Kind: ActionNone, Reason: "waiting for the new primary " + o.Target + " to answer"}
	}
	// 3. Promote, 4. label, 5. record.
	if target.Replica {
		return Action{Kind: ActionPromote, Instance: o.Target, Reason: "promoting " + o.Target}
	}
	if target.Role != RolePrimary {
		return Action{Kind: ActionLabel, Instance: o.Target, Reason: o.Target + " left recovery; the client Service follows it"}
	}
	return Action{Kind: ActionCompleteTarget, Instance: o.Target, Reason: o.Target + " is the primary"}
}

// callOff reports whether the failover to target is called off, and old,
// the primary it was to replace, made the target again: a failover (the
// primary had stopped serving, o.PrimaryLostSince), not a switchover; old
// answers out of recovery, not fenced, and its pod is not being deleted
// (it came back: its server was stopped for not serving, or was killed,
// and its pod was made again before the promotion, its init container
// finding no other primary); the target answers as a replica, so it was
// not promoted; and old wrote changes that the target has not received
// and cannot receive, as it does not stream from old. Otherwise old would
// be fenced, and then either the target promoted over those changes, which
// would be thrown away as old rejoins, or, as the fenced old primary's
// changes must reach the target first, the promotion waited for for ever
// with no server taking writes (seen in CI: a PostgreSQL primary stopped
// while hung, back as the primary 2 s after its postmaster was killed,
// fenced, and the target waiting 2m25s until the test ended). A
// switchover's old primary is fenced instead: it serves, so its replicas
// stream from it.
func callOff(o Observation, old, target Instance) bool {
	return old.Name != target.Name && !o.PrimaryLostSince.IsZero() &&
		old.Reachable && !old.Replica && !old.Fenced && !old.Terminating &&
		target.Reachable && target.Replica && target.Upstream != old.Name && target.Received < old.Written
}

// steady keeps a serving primary's cluster in shape: labels, replicas that
// follow it, and a switchover when one is asked for.
func steady(o Observation, primary Instance) Action {
	others := slices.DeleteFunc(sortedByOrdinal(o.Instances), func(i Instance) bool { return i.Name == primary.Name })
	for _, i := range others {
		if i.Role == RolePrimary {
			return Action{Kind: ActionUnlabel, Instance: i.Name, Reason: i.Name + " is not the primary"}
		}
	}
	if primary.Role != RolePrimary {
		return Action{Kind: ActionLabel, Instance: primary.Name, Reason: primary.Name + " is the primary"}
	}
	for _, i := range others {
		switch {
		case i.Reachable && !i.Replica && !i.Fenced:
			return Action{Kind: ActionFence, Instance: i.Name, Reason: i.Name + " runs as a second primary; it is fenced, to rejoin as a replica of " + primary.Name}
		case i.Reachable && !i.Replica:
			return Action{Kind: ActionStop, Instance: i.Name, Reason: i.Name + " is fenced; it restarts to rejoin as a replica of " + primary.Name}
		case i.Reachable && i.Upstream == primary.Name && i.Role != RoleReplica:
			// A replica that does not stream yet is left as it is: it
			// streams through the client Service, and follows the primary
			// by itself once it reconnects.
			return Action{Kind: ActionLabelReplica, Instance: i.Name, Reason: i.Name + " streams from " + primary.Name}
		}
	}
	if primary.Cordoned {
		// A drain evicts it next (the primary's disruption budget holds
		// the eviction until it is a replica): switch over now, to a node
		// that stays, so that writes pause for a switchover.
		if to, ok := successor(o, primary); ok && !to.Cordoned {
			return Action{Kind: ActionRecordTarget, Instance: to.Name,
				Reason: fmt.Sprintf("the node of the primary %s is cordoned; switching over to %s, on a node that is not, before it is drained", primary.Name, to.Name)}
		}
		return Action{Kind: ActionNone, Reason: "the node of the primary " + primary.Name + " is cordoned, and no replica on another node streams from it to switch over to"}
	}
	if o.Requested != "" && o.Requested != primary.Name {
		r, exists := byNameOf(o.Instances, o.Requested)
		switch {
		case !exists:
			return Action{Kind: ActionNone, Reason: "switchover to " + o.Requested + " asked for, and no such instance exists"}
		case !r.Reachable || r.Upstream != primary.Name:
			return Action{Kind: ActionNone, Reason: "switchover to " + o.Requested + " waits until it streams from " + primary.Name}
		case r.Cordoned:
			return Action{Kind: ActionNone, Reason: "switchover to " + o.Requested + " waits until its node is no longer cordoned"}
		}
		return Action{Kind: ActionRecordTarget, Instance: o.Requested, Reason: "switchover to " + o.Requested + " as asked"}
	}
	return Action{Kind: ActionNone}
}

// successor is the replica to hand primary's role to in a planned
// switchover: one that streams from it (or did at the last look, when it
// no longer answers), on a node that is not cordoned if there is one, and
// of those the most advanced. None when no replica streams.
func successor(o Observation, primary Instance) (Instance, bool) {
	var best *Instance
	for k := range o.Instances {
		c := &o.Instances[k]
		if c.Name == primary.Name || !c.Reachable || !c.Replica || (c.Upstream != primary.Name && !(c.StreamedLast && !primary.Reachable)) {
			continue
		}
		if best == nil || (best.Cordoned && !c.Cordoned) || (best.Cordoned == c.Cordoned && moreAdvanced(*c, *best)) {
			best = c
		}
	}
	if best == nil {
		return Instance{}, false
	}
	return *best, true
}

// waitShutdown waits for a primary whose pod is being deleted: its clean
// shutdown sends the replicas every change it wrote, its shutdown
// checkpoint included, so that nothing is lost and it rejoins with no
// rewind. Promoting before would cut that short. The wait is bounded by
// the pod's grace period (see Instance.Terminating), for a node that is
// gone.
func waitShutdown(o Observation) Action {
	return Action{Kind: ActionWait, After: time.Second,
		Reason: "waiting for the former primary " + o.Primary + " to shut down cleanly, sending its last " + o.Terms.log() + " to the replicas"}
}

func byNameOf(instances []Instance, name string) (Instance, bool) {
	for _, i := range instances {
		if i.Name == name {
			return i, true
		}
	}
	return Instance{}, false
}

func sortedByOrdinal(instances []Instance) []Instance {
	return slices.SortedFunc(slices.Values(instances), func(a, b Instance) int { return cmp.Compare(a.Ordinal, b.Ordinal) })
}

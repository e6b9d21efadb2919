package ha

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// Instances in the states a test needs: a serving primary, a streaming
// replica, a replica whose WAL receiver stopped, an unreachable pod.
func primary(name string, ordinal int) Instance {
	return Instance{Name: name, Ordinal: ordinal, Role: RolePrimary, Ready: true, Reachable: true}
}

func replica(name string, ordinal int, upstream string, received uint64) Instance {
	return Instance{Name: name, Ordinal: ordinal, Role: RoleReplica, Ready: true, Reachable: true, Replica: true,
		Upstream: upstream, Received: received, Applied: received}
}

func down(name string, ordinal int, role Role) Instance {
	return Instance{Name: name, Ordinal: ordinal, Role: role}
}

func with(i Instance, f func(*Instance)) Instance {
	f(&i)
	return i
}

func TestNext(t *testing.T) {
	healthy := []Instance{primary("db-0", 0), replica("db-1", 1, "db-0", 100), replica("db-2", 2, "db-0", 100)}
	primaryDown := []Instance{down("db-0", 0, RolePrimary), replica("db-1", 1, "", 90), replica("db-2", 2, "", 120)}
	tests := []struct {
		name string
		o    Observation
		want Action
	}{
		{"no instance", Observation{}, Action{Kind: ActionNone}},

		// The first primary.
		{"bootstrap: the lowest ordinal initialises the data",
			Observation{Instances: []Instance{down("db-1", 1, RoleNone), down("db-0", 0, RoleNone)}},
			Action{Kind: ActionRecordTarget, Instance: "db-0"}},
		{"bootstrap: the one out of recovery (a restored or upgraded single instance)",
			Observation{Instances: []Instance{with(replica("db-0", 0, "", 0), func(i *Instance) { i.Role = RoleNone }), with(primary("db-1", 1), func(i *Instance) { i.Role = RoleNone })}},
			Action{Kind: ActionRecordTarget, Instance: "db-1"}},

		// The steady state.
		{"healthy: nothing to do", Observation{Instances: healthy, Primary: "db-0"}, Action{Kind: ActionNone}},
		{"primary not labelled yet",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone })}, Primary: "db-0"},
			Action{Kind: ActionLabel, Instance: "db-0"}},
		{"a replica labelled primary loses the label",
			Observation{Instances: []Instance{primary("db-0", 0), with(replica("db-1", 1, "db-0", 1), func(i *Instance) { i.Role = RolePrimary })}, Primary: "db-0"},
			Action{Kind: ActionUnlabel, Instance: "db-1"}},
		{"a former primary back out of recovery is fenced, never left as a second primary",
			Observation{Instances: []Instance{primary("db-1", 1), with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone })}, Primary: "db-1"},
			Action{Kind: ActionFence, Instance: "db-0"}},
		{"a fenced former primary is stopped, to rejoin as a replica",
			Observation{Instances: []Instance{primary("db-1", 1), with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone; i.Fenced = true })}, Primary: "db-1"},
			Action{Kind: ActionStop, Instance: "db-0"}},
		{"a replica that does not stream from the primary yet is left to reconnect",
			Observation{Instances: []Instance{primary("db-1", 1), with(replica("db-2", 2, "", 5), func(i *Instance) { i.Role = RoleNone })}, Primary: "db-1"},
			Action{Kind: ActionNone}},
		{"a new streaming replica gets the replica label",
			Observation{Instances: []Instance{primary("db-0", 0), with(replica("db-1", 1, "db-0", 5), func(i *Instance) { i.Role = RoleNone })}, Primary: "db-0"},
			Action{Kind: ActionLabelReplica, Instance: "db-1"}},

		// Failover.
		{"primary lost for less than the delay: wait out the rest (a pod restart is no failover)",
			Observation{Now: t0.Add(4 * time.Second), Instances: primaryDown, Primary: "db-0", PrimaryLostSince: t0, FailoverDelay: 10 * time.Second},
			Action{Kind: ActionWait, After: 6 * time.Second}},
		{"primary lost for the delay: the replica with the most WAL received is the target",
			Observation{Now: t0.Add(10 * time.Second), Instances: primaryDown, Primary: "db-0", PrimaryLostSince: t0, FailoverDelay: 10 * time.Second},
			Action{Kind: ActionRecordTarget, Instance: "db-2"}},
		{"equal WAL received: more replayed wins",
			Observation{Now: t0.Add(time.Minute), Instances: []Instance{down("db-0", 0, RolePrimary), replica("db-1", 1, "", 100),
				with(replica("db-2", 2, "", 100), func(i *Instance) { i.Applied = 90 })}, Primary: "db-0", PrimaryLostSince: t0},
			Action{Kind: ActionRecordTarget, Instance: "db-1"}},
		{"the most WAL received wins over the most replayed: with synchronous replication it alone holds every acknowledged commit",
			Observation{Now: t0.Add(time.Minute), Instances: []Instance{down("db-0", 0, RolePrimary),
				with(replica("db-1", 1, "", 120), func(i *Instance) { i.Applied = 80 }), replica("db-2", 2, "", 100)},
				Primary: "db-0", PrimaryLostSince: t0},
			Action{Kind: ActionRecordTarget, Instance: "db-1"}},
		{"equal WAL: the lower ordinal, for a stable choice",
			Observation{Now: t0.Add(time.Minute), Instances: []Instance{down("db-0", 0, RolePrimary), replica("db-2", 2, "", 100), replica("db-1", 1, "", 100)},
				Primary: "db-0", PrimaryLostSince: t0},
			Action{Kind: ActionRecordTarget, Instance: "db-1"}},
		{"no replica answers: nothing to promote",
			Observation{Now: t0.Add(time.Minute), Instances: []Instance{down("db-0", 0, RolePrimary), down("db-1", 1, RoleReplica)}, Primary: "db-0", PrimaryLostSince: t0},
			Action{Kind: ActionNone}},
		{"the primary's pod is gone: same as not serving",
			Observation{Now: t0.Add(time.Minute), Instances: []Instance{replica("db-1", 1, "", 7)}, Primary: "db-0", PrimaryLostSince: t0, FailoverDelay: 10 * time.Second},
			Action{Kind: ActionRecordTarget, Instance: "db-1"}},
		{"a primary whose pod is being deleted: wait for its clean shutdown, whatever the delay",
			Observation{Now: t0.Add(time.Second), Instances: []Instance{with(down("db-0", 0, RolePrimary), func(i *Instance) { i.Terminating = true }), replica("db-1", 1, "", 7)},
				Primary: "db-0", PrimaryLostSince: t0},
			Action{Kind: ActionWait, After: time.Second}},
		{"a primary whose pod is being deleted hands over at once to the replica that streamed from it with the most WAL, whatever the delay",
			Observation{Now: t0.Add(time.Second), Instances: []Instance{with(down("db-0", 0, RolePrimary), func(i *Instance) { i.Terminating = true }),
				with(replica("db-1", 1, "", 7), func(i *Instance) { i.StreamedLast = true }), with(replica("db-2", 2, "", 9), func(i *Instance) { i.StreamedLast = true })},
				Primary: "db-0", PrimaryLostSince: t0, FailoverDelay: time.Hour, ShutdownSendsAll: true},
			Action{Kind: ActionRecordTarget, Instance: "db-2"}},
		{"a primary whose pod is being deleted, of an engine whose shutdown may not send it all (MySQL): waited for",
			Observation{Now: t0.Add(time.Second), Instances: []Instance{with(down("db-0", 0, RolePrimary), func(i *Instance) { i.Terminating = true }),
				with(replica("db-1", 1, "", 7), func(i *Instance) { i.StreamedLast = true })},
				Primary: "db-0", PrimaryLostSince: t0, FailoverDelay: time.Hour},
			Action{Kind: ActionWait, After: time.Second}},
		{"a primary whose pod is being deleted: a replica that did not stream from it is no successor, though it has more WAL",
			Observation{Now: t0.Add(time.Second), Instances: []Instance{with(down("db-0", 0, RolePrimary), func(i *Instance) { i.Terminating = true }),
				with(replica("db-1", 1, "", 7), func(i *Instance) { i.StreamedLast = true }), replica("db-2", 2, "", 9)},
				Primary: "db-0", PrimaryLostSince: t0, ShutdownSendsAll: true},
			Action{Kind: ActionRecordTarget, Instance: "db-1"}},
		{"a primary whose pod is being deleted: a replica on a node that is not cordoned first",
			Observation{Now: t0.Add(time.Second), Instances: []Instance{with(down("db-0", 0, RolePrimary), func(i *Instance) { i.Terminating = true }),
				with(replica("db-1", 1, "", 7), func(i *Instance) { i.StreamedLast = true }), with(replica("db-2", 2, "", 9), func(i *Instance) { i.StreamedLast = true; i.Cordoned = true })},
				Primary: "db-0", PrimaryLostSince: t0, ShutdownSendsAll: true},
			Action{Kind: ActionRecordTarget, Instance: "db-1"}},
		{"a primary whose pod's grace period ran out (its node is gone): fail over",
			Observation{Now: t0.Add(time.Minute), Instances: []Instance{down("db-0", 0, RolePrimary), replica("db-1", 1, "", 7)},
				Primary: "db-0", PrimaryLostSince: t0},
			Action{Kind: ActionRecordTarget, Instance: "db-1"}},
		{"a primary whose pod is not ready, but which answers, is waited for longer than the failover delay",
			Observation{Now: t0.Add(time.Second), Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Ready = false }), replica("db-1", 1, "db-0", 7)},
				Primary: "db-0", PrimaryLostSince: t0, FailoverDelay: 10 * time.Second},
			Action{Kind: ActionWait, After: UnreadyFailoverDelay - time.Second}},
		{"a primary whose pod is not ready, but which answers: the failover delay when it is longer",
			Observation{Now: t0.Add(time.Second), Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Ready = false }), replica("db-1", 1, "db-0", 7)},
				Primary: "db-0", PrimaryLostSince: t0, FailoverDelay: 5 * time.Minute},
			Action{Kind: ActionWait, After: 5*time.Minute - time.Second}},
		{"a primary whose pod is not ready, but which answers, with a failover delay of 0: waited for",
			Observation{Now: t0.Add(3 * time.Second), Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Ready = false }), replica("db-1", 1, "db-0", 7)},
				Primary: "db-0", PrimaryLostSince: t0},
			Action{Kind: ActionWait, After: UnreadyFailoverDelay - 3*time.Second}},
		{"a primary whose pod is not ready, but which answers, is kept in shape while it is waited for",
			Observation{Now: t0.Add(time.Second), Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Ready = false; i.Role = RoleNone }), replica("db-1", 1, "db-0", 7)},
				Primary: "db-0", PrimaryLostSince: t0},
			Action{Kind: ActionLabel, Instance: "db-0"}},
		{"a primary whose pod has not been ready for UnreadyFailoverDelay, though it answers: fail over",
			Observation{Now: t0.Add(UnreadyFailoverDelay), Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Ready = false }), replica("db-1", 1, "db-0", 7)},
				Primary: "db-0", PrimaryLostSince: t0, FailoverDelay: 10 * time.Second},
			Action{Kind: ActionRecordTarget, Instance: "db-1"}},
		{"a primary that does not answer, whose server runs in a pod made before it was lost: stopped, to hand over as it shuts down",
			Observation{Now: t0.Add(40 * time.Second), Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Reachable = false; i.Running = true; i.Created = t0.Add(-time.Hour) }), replica("db-1", 1, "db-0", 7)},
				Primary: "db-0", PrimaryLostSince: t0, FailoverDelay: 30 * time.Second, ShutdownSendsAll: true},
			Action{Kind: ActionStop, Instance: "db-0"}},
		{"a primary that does not answer, whose server runs in a pod made since it was lost: failed over",
			Observation{Now: t0.Add(40 * time.Second), Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Reachable = false; i.Running = true; i.Created = t0.Add(time.Second) }), replica("db-1", 1, "db-0", 7)},
				Primary: "db-0", PrimaryLostSince: t0, FailoverDelay: 30 * time.Second, ShutdownSendsAll: true},
			Action{Kind: ActionRecordTarget, Instance: "db-1"}},
		{"a primary that does not answer, whose server runs, of an engine whose shutdown may not send all: failed over",
			Observation{Now: t0.Add(40 * time.Second), Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Reachable = false; i.Running = true; i.Created = t0.Add(-time.Hour) }), replica("db-1", 1, "db-0", 7)},
				Primary: "db-0", PrimaryLostSince: t0, FailoverDelay: 30 * time.Second},
			Action{Kind: ActionRecordTarget, Instance: "db-1"}},
		{"a primary that answers, whose pod has not been ready for UnreadyFailoverDelay, its server running: stopped",
			Observation{Now: t0.Add(UnreadyFailoverDelay), Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Ready = false; i.Running = true; i.Created = t0.Add(-time.Hour) }), replica("db-1", 1, "db-0", 7)},
				Primary: "db-0", PrimaryLostSince: t0, ShutdownSendsAll: true},
			Action{Kind: ActionStop, Instance: "db-0"}},
		{"a primary that does not answer, its pod still ready: the failover delay alone",
			Observation{Now: t0.Add(10 * time.Second), Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Reachable = false }), replica("db-1", 1, "db-0", 7)},
				Primary: "db-0", PrimaryLostSince: t0, FailoverDelay: 10 * time.Second},
			Action{Kind: ActionRecordTarget, Instance: "db-1"}},

		// Following a recorded target, in order.
		{"target: the old primary's label goes first, even while it is down",
			Observation{Instances: primaryDown, Primary: "db-0", Target: "db-2"},
			Action{Kind: ActionUnlabel, Instance: "db-0"}},
		{"target: an old primary that still accepts writes is fenced before the promotion",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone }), replica("db-1", 1, "db-0", 100)}, Primary: "db-0", Target: "db-1"},
			Action{Kind: ActionFence, Instance: "db-0"}},
		{"target (switchover): the fenced old primary stops only once the target received all it wrote",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone; i.Fenced = true; i.Written = 101 }), replica("db-1", 1, "db-0", 100)},
				Primary: "db-0", Target: "db-1"},
			Action{Kind: ActionWait, After: time.Second}},
		{"target (switchover): the target has it all: the old primary stops",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone; i.Fenced = true; i.Written = 100 }), replica("db-1", 1, "db-0", 100)},
				Primary: "db-0", Target: "db-1"},
			Action{Kind: ActionStop, Instance: "db-0"}},
		{"target (switchover): the stopped old primary ends its clean shutdown before the promotion",
			Observation{Instances: []Instance{with(down("db-0", 0, RoleNone), func(i *Instance) { i.Terminating = true }), replica("db-1", 1, "db-0", 100)},
				Primary: "db-0", Target: "db-1"},
			Action{Kind: ActionWait, After: time.Second}},
		{"target (switchover), the fence holds: the fenced old primary still waits for the target to receive all it wrote",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone; i.Fenced = true; i.FenceHolds = true; i.Written = 101 }), replica("db-1", 1, "db-0", 100)},
				Primary: "db-0", Target: "db-1"},
			Action{Kind: ActionWait, After: time.Second}},
		{"target (switchover), the fence holds: the target has it all: promoted while the old primary runs",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone; i.Fenced = true; i.FenceHolds = true; i.Written = 100 }), replica("db-1", 1, "db-0", 100)},
				Primary: "db-0", Target: "db-1"},
			Action{Kind: ActionPromote, Instance: "db-1"}},
		{"target, the fence holds: an old primary not fenced yet is fenced first",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone; i.FenceHolds = true }), replica("db-1", 1, "db-0", 100)},
				Primary: "db-0", Target: "db-1"},
			Action{Kind: ActionFence, Instance: "db-0"}},
		{"target, the fence holds: a stopped old primary still ends its clean shutdown first",
			Observation{Instances: []Instance{with(down("db-0", 0, RoleNone), func(i *Instance) { i.Terminating = true; i.FenceHolds = true }), replica("db-1", 1, "db-0", 100)},
				Primary: "db-0", Target: "db-1"},
			Action{Kind: ActionWait, After: time.Second}},
		{"the fence holds: once the target is the primary, the fenced old primary stops, to rejoin",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone; i.Fenced = true; i.FenceHolds = true; i.Written = 100 }), primary("db-1", 1)},
				Primary: "db-1"},
			Action{Kind: ActionStop, Instance: "db-0"}},
		{"target (failover): the old primary back as the primary before the promotion, with WAL the target does not stream: called off",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone; i.Written = 130 }), replica("db-1", 1, "", 100)},
				Primary: "db-0", Target: "db-1", PrimaryLostSince: t0},
			Action{Kind: ActionRecordTarget, Instance: "db-0"}},
		{"target (failover), called off: the old primary is labelled again",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone; i.Written = 130 }), replica("db-1", 1, "", 100)},
				Primary: "db-0", Target: "db-0", PrimaryLostSince: t0},
			Action{Kind: ActionLabel, Instance: "db-0"}},
		{"target (failover), called off: labelled, it is the primary again",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Written = 130 }), replica("db-1", 1, "", 100)},
				Primary: "db-0", Target: "db-0", PrimaryLostSince: t0},
			Action{Kind: ActionCompleteTarget, Instance: "db-0"}},
		{"target (failover): the old primary back, the target streaming from it: fenced, as the target receives what it wrote",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone; i.Written = 130 }), replica("db-1", 1, "db-0", 100)},
				Primary: "db-0", Target: "db-1", PrimaryLostSince: t0},
			Action{Kind: ActionFence, Instance: "db-0"}},
		{"target (failover): the old primary back with nothing the target lacks: fenced",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone; i.Written = 100 }), replica("db-1", 1, "", 100)},
				Primary: "db-0", Target: "db-1", PrimaryLostSince: t0},
			Action{Kind: ActionFence, Instance: "db-0"}},
		{"target (failover): the old primary back after the target left recovery: fenced",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone; i.Written = 130 }), with(primary("db-1", 1), func(i *Instance) { i.Role = RoleNone })},
				Primary: "db-0", Target: "db-1", PrimaryLostSince: t0},
			Action{Kind: ActionFence, Instance: "db-0"}},
		{"target (failover): the old primary back while the target does not answer (it may have been promoted): fenced",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone; i.Written = 130 }), down("db-1", 1, RoleReplica)},
				Primary: "db-0", Target: "db-1", PrimaryLostSince: t0},
			Action{Kind: ActionFence, Instance: "db-0"}},
		{"target (failover): the old primary already fenced is not called back",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone; i.Fenced = true; i.Written = 130 }), replica("db-1", 1, "", 100)},
				Primary: "db-0", Target: "db-1", PrimaryLostSince: t0},
			Action{Kind: ActionWait, After: time.Second}},
		{"target (switchover): an old primary ahead of a target that does not stream is fenced, not called back",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Role = RoleNone; i.Written = 130 }), replica("db-1", 1, "", 100)},
				Primary: "db-0", Target: "db-1"},
			Action{Kind: ActionFence, Instance: "db-0"}},
		{"target: promote",
			Observation{Instances: []Instance{down("db-0", 0, RoleNone), replica("db-2", 2, "", 120)}, Primary: "db-0", Target: "db-2"},
			Action{Kind: ActionPromote, Instance: "db-2"}},
		{"target: promoted, then labelled",
			Observation{Instances: []Instance{down("db-0", 0, RoleNone), with(primary("db-2", 2), func(i *Instance) { i.Role = RoleReplica })}, Primary: "db-0", Target: "db-2"},
			Action{Kind: ActionLabel, Instance: "db-2"}},
		{"target: labelled, then recorded as the primary",
			Observation{Instances: []Instance{down("db-0", 0, RoleNone), primary("db-2", 2)}, Primary: "db-0", Target: "db-2"},
			Action{Kind: ActionCompleteTarget, Instance: "db-2"}},
		{"target: a restarted controller finds the target recorded and goes on, whatever the delay",
			Observation{Now: t0, Instances: []Instance{down("db-0", 0, RoleNone), replica("db-2", 2, "", 120)}, Primary: "db-0", Target: "db-2",
				PrimaryLostSince: t0, FailoverDelay: time.Hour},
			Action{Kind: ActionPromote, Instance: "db-2"}},
		{"target: not answering, wait",
			Observation{Instances: []Instance{down("db-0", 0, RoleNone), down("db-2", 2, RoleReplica)}, Primary: "db-0", Target: "db-2"},
			Action{Kind: ActionNone}},

		// Switchover.
		{"switchover asked: recorded once the replica streams from the primary",
			Observation{Instances: healthy, Primary: "db-0", Requested: "db-2"},
			Action{Kind: ActionRecordTarget, Instance: "db-2"}},
		{"switchover to a replica that does not stream: waits",
			Observation{Instances: []Instance{primary("db-0", 0), with(replica("db-1", 1, "db-0", 1), func(i *Instance) { i.Reachable = false })}, Primary: "db-0", Requested: "db-1"},
			Action{Kind: ActionNone}},
		{"switchover to an instance that does not exist: nothing",
			Observation{Instances: healthy, Primary: "db-0", Requested: "db-7"},
			Action{Kind: ActionNone}},
		{"switchover to the primary: nothing", Observation{Instances: healthy, Primary: "db-0", Requested: "db-0"}, Action{Kind: ActionNone}},
		{"switchover asked to a replica on a cordoned node: waits",
			Observation{Instances: []Instance{primary("db-0", 0), with(replica("db-1", 1, "db-0", 100), func(i *Instance) { i.Cordoned = true })}, Primary: "db-0", Requested: "db-1"},
			Action{Kind: ActionNone}},

		// Drains.
		{"the primary's node is cordoned: switch over to the streaming replica with the most WAL on another node",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Cordoned = true }), replica("db-1", 1, "db-0", 100), replica("db-2", 2, "db-0", 120)}, Primary: "db-0"},
			Action{Kind: ActionRecordTarget, Instance: "db-2"}},
		{"the primary's node is cordoned: not to a replica on a cordoned node",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Cordoned = true }), replica("db-1", 1, "db-0", 100), with(replica("db-2", 2, "db-0", 120), func(i *Instance) { i.Cordoned = true })}, Primary: "db-0"},
			Action{Kind: ActionRecordTarget, Instance: "db-1"}},
		{"the primary's node is cordoned: not to a replica that does not stream",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Cordoned = true }), replica("db-1", 1, "", 100), with(replica("db-2", 2, "", 120), func(i *Instance) { i.StreamedLast = true })}, Primary: "db-0"},
			Action{Kind: ActionNone}},
		{"the primary's node is cordoned, and so is every replica's: nothing",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Cordoned = true }), with(replica("db-1", 1, "db-0", 100), func(i *Instance) { i.Cordoned = true })}, Primary: "db-0"},
			Action{Kind: ActionNone}},
		{"the primary's node is cordoned: before a switchover asked back to it",
			Observation{Instances: []Instance{with(primary("db-0", 0), func(i *Instance) { i.Cordoned = true }), replica("db-1", 1, "db-0", 100)}, Primary: "db-0", Requested: "db-0"},
			Action{Kind: ActionRecordTarget, Instance: "db-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Next(tt.o)
			if got.Kind != tt.want.Kind || got.Instance != tt.want.Instance || got.After != tt.want.After {
				t.Fatalf("Next = %+v, want %s %q after %s", got, tt.want.Kind, tt.want.Instance, tt.want.After)
			}
			if got.Kind != ActionNone && got.Reason == "" {
				t.Fatalf("Next = %+v: an action without a reason", got)
			}
		})
	}
}

// Whatever is observed, no step leaves two instances labelled primary, and
// none promotes or labels while another instance carries the label or
// accepts writes. Where the fence holds, a fenced instance accepts none,
// and the target is promoted beside the fenced old primary only once it
// received all that primary wrote.
func TestNextNeverMakesTwoPrimaries(t *testing.T) {
	roles := []Role{RoleNone, RolePrimary, RoleReplica}
	for mask := range 1 << 12 {
		var instances []Instance
		for k := range 3 {
			bits := mask >> (4 * k) & 15
			i := Instance{Name: []string{"db-0", "db-1", "db-2"}[k], Ordinal: k, Role: roles[bits%3],
				Reachable: bits&4 != 0 || bits%8 == 1, Replica: bits&2 != 0, Fenced: bits&8 != 0,
				Received: uint64(98 + 2*k), Applied: uint64(98 + 2*k), Written: 101}
			instances = append(instances, i)
		}
		for _, target := range []string{"", "db-0", "db-1", "db-2"} {
			// Whether each server's fence holds (MySQL beside MariaDB), and
			// whether its pod is ready.
			for flags := range 1 << 6 {
				for k := range instances {
					instances[k].FenceHolds = flags>>k&1 != 0
					instances[k].Ready = flags>>(3+k)&1 != 0
				}
				o := Observation{Now: t0.Add(time.Hour), Instances: instances, Primary: "db-0", Target: target, PrimaryLostSince: t0}
				a := Next(o)
				if a.Kind != ActionLabel && a.Kind != ActionPromote {
					continue
				}
				promoted, _ := byNameOf(instances, a.Instance)
				for _, other := range instances {
					if other.Name == a.Instance {
						continue
					}
					if other.Role == RolePrimary {
						t.Errorf("%+v: %s %s while %s is labelled primary", o, a.Kind, a.Instance, other.Name)
					}
					if a.Kind != ActionPromote || !other.Reachable || other.Replica {
						continue
					}
					if !other.FenceHolds || !other.Fenced {
						t.Errorf("%+v: promotes %s while %s accepts writes", o, a.Instance, other.Name)
					} else if other.Name == o.Primary && promoted.Received < other.Written {
						t.Errorf("%+v: promotes %s, which received %d, while the fenced %s wrote %d", o, a.Instance, promoted.Received, other.Name, other.Written)
					}
				}
			}
		}
	}
}

package ha

import (
	"context"
	"fmt"
	"strconv"
)

// SynchronousUnsupportedError is SetSynchronous's error for a number of
// replicas the server cannot wait for: the Database's spec asks what the
// server cannot do, and asking again does not help. Why says what the
// server cannot do, in words a person acts on.
type SynchronousUnsupportedError struct {
	Why string
}

func (e *SynchronousUnsupportedError) Error() string {
	return "synchronous replication as asked is not supported by this server: " + e.Why
}

// Client is how the controller talks to the servers of one engine, through
// each pod's own address, for replication. Package ha decides from what it
// answers (Facts, turned into an Instance); each engine implements it with
// its own SQL (package pgsql for PostgreSQL). It holds no connection
// between calls, and no credentials: the caller reads them from the
// Database's Secret when it needs them.
type Client interface {
	// Probe asks the server at host:port what it is.
	Probe(ctx context.Context, host string, port int32, cred Credentials) (Facts, error)
	// Promote makes a replica a primary, waits until it writes, and makes
	// sure a former primary can rejoin from it.
	Promote(ctx context.Context, host string, port int32, cred Credentials) error
	// Fence makes a primary refuse writes from now on, ends its clients'
	// sessions, and marks its data so that at its next start it rejoins as
	// a replica and never serves as a primary again.
	Fence(ctx context.Context, host string, port int32, cred Credentials) error
	// SetSynchronous makes a primary acknowledge a commit once n replicas
	// have it (any n of them); 0 for asynchronous replication.
	SetSynchronous(ctx context.Context, host string, port int32, cred Credentials, n int32) error
	// Terms are the engine's words for its change log.
	Terms() Terms
}

// Credentials are the superuser's, from the Database's Secret, with the
// authorities the servers' certificates are verified against (its
// ca.crt); none when the servers have no TLS.
type Credentials struct {
	User, Password string
	Authorities    string
}

// RejectedError is a server's refusal of a parameter of spec.parameters,
// its value or its name, in its words: asking again does not help until
// the parameter changes.
type RejectedError struct {
	Name, Value, Message string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("parameter %s = %q: %s", e.Name, e.Value, e.Message)
}

// Facts is what one server answered.
type Facts struct {
	// Name is the pod the server says it runs in: a server behind a stale
	// address is not taken for another.
	Name string
	// Replica says it applies another server's changes and writes none of
	// its own.
	Replica bool
	// Received and Applied are a replica's positions in the primary's change
	// log (received, and applied); Written is a primary's. Received is all
	// the replica holds, never less than Applied: a replica that restarted
	// holds what it applied before it receives anything new. Positions of
	// one Database's servers compare: more is further.
	Received, Applied, Written uint64
	// Standbys are, on a primary, the replicas it sends changes to.
	Standbys []Standby
	// Fenced says a server that is no replica refuses writes, as Fence
	// leaves it.
	Fenced bool
	// Synchronous is how many replicas a commit waits for, as SetSynchronous
	// sets it: 0 for none, -1 for a setting SetSynchronous does not make.
	Synchronous int32
	// FenceHolds says that once fenced, the server refuses every write,
	// its superuser's too, for as long as it runs (MySQL's
	// super_read_only), so that a failover need not stop it before it
	// promotes the target (Instance.FenceHolds). It is the server's, not
	// the engine's: one client talks to MySQL and MariaDB, whose read_only
	// does not stop an account with all privileges. PostgreSQL's fence
	// does not hold either: a session may turn
	// default_transaction_read_only off.
	FenceHolds bool
	// Stalled is, on a primary, in the server's words, that commits have
	// waited long for replicas to acknowledge them (MySQL's and
	// MariaDB's semi-synchronous replication), and what else waits for
	// them; empty while none has, and for engines that do not tell.
	Stalled string
	// CloneWaits says that a clone from the primary waits for its stalled
	// commits to end (MySQL's): while too few replicas stream, neither
	// ends by itself.
	CloneWaits bool
	// Broken is, on a replica, why it cannot replicate from its primary
	// until it rejoins or is seeded again, in the server's words: the
	// primary no longer has the changes it needs (purged from its log),
	// or refuses its position (diverged). No retry of the server's cures
	// it. Empty while it can. PostgreSQL does not tell: the controller
	// finds a replica that diverged from the Timelines (Diverged).
	Broken string
	// Timeline is PostgreSQL's: on a primary, the timeline it writes; on a
	// replica, the newest timeline it holds WAL of. 0 for engines without.
	Timeline uint32
	// TimelineEnds are, on a PostgreSQL primary, where each earlier
	// timeline of its history ended, the next one beginning there (its
	// timeline history file): by timeline.
	TimelineEnds map[uint32]uint64
}

// Standby is a replica that a primary sends changes to.
type Standby struct {
	// Name is the replica's pod name.
	Name string
	// Streaming says it is up to date with the primary's stream (not
	// catching up, or stopping).
	Streaming bool
	// LagBytes is what the primary wrote that it has not applied yet; nil
	// when the engine's primary does not know (MySQL's does not).
	LagBytes *int64
}

// Terms name an engine's change log in the Reasons of Actions: "WAL" and
// "0/3000060" for PostgreSQL. The zero Terms say "changes", and positions
// in decimal.
type Terms struct {
	// Log is what the change log is called.
	Log string
	// Position formats a position in it.
	Position func(uint64) string
}

func (t Terms) log() string {
	if t.Log == "" {
		return "changes"
	}
	return t.Log
}

func (t Terms) position(n uint64) string {
	if t.Position == nil {
		return strconv.FormatUint(n, 10)
	}
	return t.Position(n)
}

// Observe is the Instance of a pod whose server answered facts.
func Observe(i Instance, facts Facts) Instance {
	i.Reachable, i.Replica, i.Fenced, i.FenceHolds = true, facts.Replica, facts.Fenced, facts.FenceHolds
	i.Received, i.Applied, i.Written = facts.Received, facts.Applied, facts.Written
	return i
}

// SynchronousReplicas is how many replicas a commit of the primary waits
// for, under spec.replication.synchronous (number and durability), with
// streaming replicas streaming now and desired pods in all: at most every
// replica. Preferred durability drops to asynchronous (0) while fewer than
// number stream, so that writes go on; Required keeps the quorum, and
// writes wait. A Database of one pod has no replica to wait for.
func SynchronousReplicas(number int32, preferred bool, streaming int, desired int32) int32 {
	if number <= 0 || desired < 2 {
		return 0
	}
	n := min(number, desired-1)
	if preferred && int32(streaming) < n {
		return 0
	}
	return n
}

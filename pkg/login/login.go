// Package login tells whether the servers of a Database take the
// credentials of its Secret: the Checker logs in to each ready server as a
// client does, off the sync workers, at most once per interval and at once
// when what to log in to changes, and tells the controller when the answer
// changes.
//
// The pods' readiness probes do not: a server that refuses a password
// serves the clients that have the password it holds, and a probe that
// failed then would take the server out of its Services, and cut those
// clients off. A password changed in the database and not in the Secret is
// a truth of its own, which the status tells (CredentialsRejected).
//
// A server that does not answer says nothing of the credentials: the
// controller may not reach the pods' addresses (it runs outside the
// cluster, or a network policy keeps it out) while the kubelet's probes,
// which judge readiness, do.
package login

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Timeout bounds one login.
const Timeout = 5 * time.Second

// forgetAfter is how long an entry that no pass refreshed is kept: every
// Database gets a full pass at least once an hour (the settled check's
// limit), so an entry this old is one of a Database gone unseen.
const forgetAfter = 2 * time.Hour

// Credentials are what the Secret gives clients: the username and password,
// and the database they connect to.
type Credentials struct {
	User, Password, Database string
	// Authorities are the Secret's ca.crt: with them, the login is over
	// TLS and verifies the server's certificate.
	Authorities string
}

// Func logs in to the server at host:port with cred, and logs out. It
// returns a *RefusedError when the server answered and refused the
// credentials; any other error says nothing of them.
type Func func(ctx context.Context, host string, port int32, cred Credentials) error

// RefusedError is a server's refusal of the credentials, in its words.
type RefusedError struct {
	Message string
}

func (e *RefusedError) Error() string { return "the server refused the credentials: " + e.Message }

// Server is one server of a Database: its pod, and the address to log in to.
type Server struct {
	Pod, Host string
}

// Target is what to log in to for one Database: its ready servers, in pod
// name order, the engine's port, and the Secret's credentials.
type Target struct {
	Database    types.NamespacedName
	Engine      string
	Port        int32
	Servers     []Server
	Credentials Credentials
}

func (t Target) equal(o Target) bool {
	return t.Database == o.Database && t.Engine == o.Engine && t.Port == o.Port &&
		t.Credentials == o.Credentials && slices.Equal(t.Servers, o.Servers)
}

// Refusal is one server's refusal of the credentials.
type Refusal struct {
	Pod, Message string
}

// Verdict is what the last logins to a Database's servers found.
type Verdict struct {
	// Refusals are the servers that refused the credentials, by pod name;
	// empty when none did, or none was asked yet.
	Refusals []Refusal
	// Generation changes whenever Refusals do: a pass that read one
	// Generation and settled is out of date once it changed.
	Generation uint64
}

// Config is what a Checker needs.
type Config struct {
	// Logins log in to the servers of each engine, by engine name. An
	// engine without one is not checked.
	Logins map[string]Func
	// Interval is how often each Database's servers are logged in to.
	Interval time.Duration
	// Clock tells when a check is due.
	Clock clock.PassiveClock
	// Changed is told the Database whose Verdict changed.
	Changed func(types.NamespacedName)
	// Workers is how many Databases are checked at once.
	Workers int
}

// Checker logs in to the servers of the Databases it is given, each at
// most once per Interval, and at once when its Target changes. It is safe
// for concurrent use.
type Checker struct {
	cfg     Config
	mu      sync.Mutex
	entries map[types.NamespacedName]*entry
	// generation numbers the Verdicts, across Databases, so that a
	// Database forgotten and seen again never gets an old number.
	generation uint64
}

type entry struct {
	target  Target
	verdict Verdict
	// checked is the Target the last check logged in to, at checkedAt;
	// running says a check is under way.
	checked   *Target
	checkedAt time.Time
	running   bool
	// touched is when a pass last gave the Target.
	touched time.Time
}

// New returns a Checker.
func New(cfg Config) *Checker {
	if cfg.Workers < 1 {
		cfg.Workers = 1
	}
	return &Checker{cfg: cfg, entries: map[types.NamespacedName]*entry{}}
}

// Interval is how often each Database's servers are logged in to.
func (c *Checker) Interval() time.Duration { return c.cfg.Interval }

// Checks reports whether the servers of engine are logged in to.
func (c *Checker) Checks(engine string) bool {
	_, ok := c.cfg.Logins[engine]
	return ok
}

// Check gives the Target of a Database, and returns its last Verdict.
// A new Target is logged in to at once; the Verdict stays the last one
// until then, so that a Secret that changes to another wrong password does
// not report the Database right in between.
func (c *Checker) Check(t Target) Verdict {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[t.Database]
	if !ok {
		e = &entry{}
		c.entries[t.Database] = e
	}
	e.target, e.touched = t, c.cfg.Clock.Now()
	return e.verdict
}

// Generation is the Generation of the Database's Verdict; 0 when it has
// none.
func (c *Checker) Generation(db types.NamespacedName) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[db]; ok {
		return e.verdict.Generation
	}
	return 0
}

// Forget drops a Database: it has no server to log in to, or is gone.
func (c *Checker) Forget(db types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, db)
}

// due marks the checks that are due now as running and returns them: those
// of a Target not logged in to yet, and those last checked an Interval ago.
// It drops the entries no pass refreshed for forgetAfter.
func (c *Checker) due() []Target {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Clock.Now()
	var jobs []Target
	for db, e := range c.entries {
		switch {
		case now.Sub(e.touched) > forgetAfter:
			delete(c.entries, db)
		case e.running:
		case e.checked == nil || !e.checked.equal(e.target) || now.Sub(e.checkedAt) >= c.cfg.Interval:
			e.running = true
			jobs = append(jobs, e.target)
		}
	}
	return jobs
}

// CheckDue logs in to every Database whose check is due, and waits until
// all are done.
func (c *Checker) CheckDue(ctx context.Context) {
	var wg sync.WaitGroup
	for _, j := range c.due() {
		wg.Go(func() { c.check(ctx, j) })
	}
	wg.Wait()
}

// Run checks what is due every second, with at most Workers checks at
// once, until ctx is done.
func (c *Checker) Run(ctx context.Context) {
	jobs := make(chan Target)
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Go(func() {
			for j := range jobs {
				c.check(ctx, j)
			}
		})
	}
	defer wg.Wait()
	defer close(jobs)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		for _, j := range c.due() {
			select {
			case jobs <- j:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// check logs in to each server of t at once, and records what they said.
// A server that did not answer keeps its last answer.
func (c *Checker) check(ctx context.Context, t Target) {
	logger := klog.FromContext(ctx).WithValues("database", t.Database)
	login := c.cfg.Logins[t.Engine]
	answers := make([]error, len(t.Servers))
	if login != nil {
		var wg sync.WaitGroup
		for k, s := range t.Servers {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(ctx, Timeout)
				defer cancel()
				answers[k] = login(ctx, s.Host, t.Port, t.Credentials)
			})
		}
		wg.Wait()
	}

	c.mu.Lock()
	e, ok := c.entries[t.Database]
	if !ok {
		// Forgotten while it ran.
		c.mu.Unlock()
		return
	}
	e.running, e.checked, e.checkedAt = false, &t, c.cfg.Clock.Now()
	var refusals []Refusal
	for k, s := range t.Servers {
		var refused *RefusedError
		switch err := answers[k]; {
		case err == nil:
		case errors.As(err, &refused):
			refusals = append(refusals, Refusal{Pod: s.Pod, Message: refused.Message})
		default:
			logger.V(4).Info("Server did not answer the login", "pod", s.Pod, "err", err)
			if last, ok := refusalOf(e.verdict.Refusals, s.Pod); ok {
				refusals = append(refusals, last)
			}
		}
	}
	changed := !samePods(refusals, e.verdict.Refusals)
	if changed {
		c.generation++
		e.verdict = Verdict{Refusals: refusals, Generation: c.generation}
	}
	c.mu.Unlock()
	if changed {
		logger.V(2).Info("The servers' answer to the Secret's credentials changed", "refusals", len(refusals))
		if c.cfg.Changed != nil {
			c.cfg.Changed(t.Database)
		}
	}
}

func refusalOf(refusals []Refusal, pod string) (Refusal, bool) {
	for _, r := range refusals {
		if r.Pod == pod {
			return r, true
		}
	}
	return Refusal{}, false
}

// samePods reports whether a and b name the same pods: a refusal in other
// words (MySQL's names the client's address) is the same refusal.
func samePods(a, b []Refusal) bool {
	return slices.EqualFunc(a, b, func(x, y Refusal) bool { return x.Pod == y.Pod })
}

// Package podnet opens the controller's TCP connections to the servers at
// their pods' addresses: directly, or through the API server's
// port-forward (the pods/portforward subresource kubectl port-forward
// uses), for a controller that runs where the pod network is not routed
// (out of the cluster: a laptop, a CI runner). Packages pgsql and mysqlsql
// dial through DialContext; the controller's main sets its Dialer once, at
// start (SetDefault), as net/http has a DefaultTransport.
package podnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Access is how the controller reaches a server's port at its pod's
// address (the --server-access flag).
type Access string

const (
	// AccessAuto is direct in a cluster. Out of one, it dials directly,
	// and through the API server when the address is not routed from here
	// (a direct dial that times out, or has no route); an address reached
	// so is dialled through the API server first for a while.
	AccessAuto Access = "auto"
	// AccessDirect dials the pod's address, as in-cluster clients do.
	AccessDirect Access = "direct"
	// AccessPortForward dials through the API server only.
	AccessPortForward Access = "port-forward"
)

// Accesses are the values of the --server-access flag.
var Accesses = []Access{AccessAuto, AccessDirect, AccessPortForward}

// Path is the way one connection went.
type Path string

const (
	PathDirect      Path = "direct"
	PathPortForward Path = "port-forward"
)

// Pod names the pod at an address. A StatefulSet's pod comes back under
// its name: the UID tells them apart, so that no tunnel to a pod that is
// gone serves its successor.
type Pod struct {
	Namespace, Name string
	UID             types.UID
}

// PodOf finds the pod an address belongs to (PodOfIndexer), ok false when
// no pod has it.
type PodOf func(ip string) (pod Pod, ok bool)

// Tunneler opens a connection to a pod's port through the API server.
type Tunneler interface {
	Dial(ctx context.Context, pod Pod, port string) (net.Conn, error)
}

// DialFunc opens a TCP connection, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Observer is told the outcome of every connection attempt by path (the
// metrics count them).
type Observer interface {
	ObserveDial(path Path, err error)
}

// Config is what a Dialer needs.
type Config struct {
	// Access is the flag's choice; AccessAuto when empty.
	Access Access
	// InCluster says the controller runs in the cluster whose pods it
	// dials: auto is direct then.
	InCluster bool
	// Direct dials an address; a net.Dialer's when nil.
	Direct DialFunc
	// Tunnels and PodOf serve the API server's path; without them it is
	// never taken.
	Tunnels Tunneler
	PodOf   PodOf
	// DirectTimeout bounds auto's direct attempt before the API server's
	// path is tried (1 s when zero); Remember is how long an address
	// reached only through the API server is dialled that way first
	// (1 minute when zero).
	DirectTimeout, Remember time.Duration
	// Now is the clock (time.Now when nil); Observer is told every
	// attempt (none when nil).
	Now      func() time.Time
	Observer Observer
}

// Dialer opens connections to servers at their pods' addresses by the
// configured Access.
type Dialer struct {
	cfg Config
	mu  sync.Mutex
	// tunnelled holds, by address, until when auto dials it through the
	// API server first.
	tunnelled map[string]time.Time
}

// New returns the Dialer of cfg.
func New(cfg Config) *Dialer {
	if cfg.Access == "" {
		cfg.Access = AccessAuto
	}
	if cfg.Direct == nil {
		cfg.Direct = (&net.Dialer{}).DialContext
	}
	if cfg.DirectTimeout == 0 {
		cfg.DirectTimeout = time.Second
	}
	if cfg.Remember == 0 {
		cfg.Remember = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Dialer{cfg: cfg, tunnelled: map[string]time.Time{}}
}

// Effective is the access the Dialer practises: auto in a cluster is
// direct.
func (d *Dialer) Effective() Access { return Effective(d.cfg.Access, d.cfg.InCluster) }

// Effective is the access practised for access, in a cluster or not: auto
// in a cluster is direct, and needs no tunnel.
func Effective(access Access, inCluster bool) Access {
	if access == AccessAuto && inCluster {
		return AccessDirect
	}
	return access
}

var (
	defaultMu     sync.RWMutex
	defaultDialer = New(Config{Access: AccessDirect})
)

// SetDefault makes d the Dialer DialContext uses (direct until then).
func SetDefault(d *Dialer) {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	defaultDialer = d
}

// DialContext opens a connection to addr through the default Dialer.
func DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	defaultMu.RLock()
	d := defaultDialer
	defaultMu.RUnlock()
	return d.DialContext(ctx, network, addr)
}

// DialContext opens a connection to addr, a pod's address and port, by
// the Dialer's access. Its errors name the address and each path tried.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch d.Effective() {
	case AccessDirect:
		return d.direct(ctx, network, addr)
	case AccessPortForward:
		return d.portForward(ctx, addr)
	}
	if d.tunnelledFirst(addr) {
		c, err := d.portForward(ctx, addr)
		if err == nil || ctx.Err() != nil {
			return c, err
		}
		// The pod may have moved to where it is routed.
		c, derr := d.direct(ctx, network, addr)
		if derr == nil {
			d.forget(addr)
			return c, nil
		}
		return nil, fmt.Errorf("%w; %w", err, derr)
	}
	attempt, cancel := context.WithTimeout(ctx, d.cfg.DirectTimeout)
	c, err := d.direct(attempt, network, addr)
	cancel()
	if err == nil || ctx.Err() != nil || !Unrouted(err) || d.cfg.Tunnels == nil {
		return c, err
	}
	c, terr := d.portForward(ctx, addr)
	if terr != nil {
		return nil, fmt.Errorf("%w; %w", err, terr)
	}
	d.remember(ctx, addr)
	return c, nil
}

func (d *Dialer) direct(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.cfg.Direct(ctx, network, addr)
	d.observe(PathDirect, err)
	if err != nil {
		return nil, fmt.Errorf("directly: %w", err)
	}
	return c, nil
}

func (d *Dialer) portForward(ctx context.Context, addr string) (net.Conn, error) {
	c, err := d.tunnel(ctx, addr)
	d.observe(PathPortForward, err)
	if err != nil {
		return nil, fmt.Errorf("through the API server: %w", err)
	}
	return c, nil
}

func (d *Dialer) tunnel(ctx context.Context, addr string) (net.Conn, error) {
	if d.cfg.Tunnels == nil || d.cfg.PodOf == nil {
		return nil, errors.New("no port-forward client")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	pod, ok := d.cfg.PodOf(host)
	if !ok {
		return nil, fmt.Errorf("no pod has the address %s", host)
	}
	return d.cfg.Tunnels.Dial(ctx, pod, port)
}

func (d *Dialer) observe(path Path, err error) {
	if d.cfg.Observer != nil {
		d.cfg.Observer.ObserveDial(path, err)
	}
}

func (d *Dialer) tunnelledFirst(addr string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	until, ok := d.tunnelled[addr]
	if ok && !d.cfg.Now().Before(until) {
		delete(d.tunnelled, addr)
		return false
	}
	return ok
}

func (d *Dialer) remember(ctx context.Context, addr string) {
	d.mu.Lock()
	_, known := d.tunnelled[addr]
	d.tunnelled[addr] = d.cfg.Now().Add(d.cfg.Remember)
	d.mu.Unlock()
	if !known {
		klog.FromContext(ctx).V(2).Info("Server not routed from here: reached through the API server", "address", addr, "for", d.cfg.Remember)
	}
}

func (d *Dialer) forget(addr string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.tunnelled, addr)
}

// Unrouted reports whether err, a direct dial's, says that the address is
// not routed from here: a timeout, or no route to it. A refusal is not:
// the address answered.
func Unrouted(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

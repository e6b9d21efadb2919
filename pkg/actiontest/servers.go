package actiontest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/dbcontroller/database-controller/pkg/ha"
)

// Servers is a fake ha.Client: database servers by address, that answer
// what Facts holds of them and change as the calls would change real
// ones. It records every call, in order, as Calls says them. It is safe
// for the concurrent probes of a pass; a test sets Facts before a pass and
// reads them after it.
type Servers struct {
	// Facts are the servers that answer, by host. A host not in it
	// refuses the connection.
	Facts map[string]*ha.Facts
	// LogTerms are what Terms returns.
	LogTerms ha.Terms
	// SynchronousLimit, when above 0, is the most replicas a commit can
	// wait for: SetSynchronous refuses more with
	// an ha.SynchronousUnsupportedError, as MariaDB's client does.
	SynchronousLimit int32
	// Refuse are the parameters the servers refuse, with the server's
	// words; AtStart says which they read only at start (Check).
	Refuse  map[string]string
	AtStart func(name string) bool
	// Parameters are, by host, the parameters Set last left on the server.
	Parameters map[string]map[string]string
	// Presents is, by host, the serial number of the certificate the
	// server presents, and Files the one its files hold, which it presents
	// after a reload (PresentCertificate).
	Presents, Files map[string]string
	// MonitoringUsers are the hosts that have the monitoring user
	// (EnsureUser makes it).
	MonitoringUsers map[string]bool

	mu    sync.Mutex
	calls []string
}

var _ ha.Client = (*Servers)(nil)

// Calls are the calls made so far:
//
//	probe <host> as <user>
//	promote <host>
//	fence <host>
//	set synchronous replicas of <host> to <n>
//	check parameters on <host>: <name>=<value> ...
//	set parameters on <host>: <name>=<value> ...; reset <name> ...
//	present certificate <serial> on <host>
//	ensure monitoring user on <host>
func (s *Servers) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// ResetCalls forgets the calls made so far.
func (s *Servers) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// call records call, and returns the server at host.
func (s *Servers) call(host, call string) (*ha.Facts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
	f, ok := s.Facts[host]
	if !ok {
		return nil, fmt.Errorf("dial tcp %s: connect: connection refused", host)
	}
	return f, nil
}

// Probe answers host's Facts.
func (s *Servers) Probe(_ context.Context, host string, _ int32, cred ha.Credentials) (ha.Facts, error) {
	f, err := s.call(host, "probe "+host+" as "+cred.User)
	if err != nil {
		return ha.Facts{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := *f
	out.Standbys = slices.Clone(f.Standbys)
	return out, nil
}

// Promote makes host a primary that wrote what it had received.
func (s *Servers) Promote(_ context.Context, host string, _ int32, _ ha.Credentials) error {
	f, err := s.call(host, "promote "+host)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f.Replica, f.Written = false, f.Received
	return nil
}

// Fence makes host refuse writes.
func (s *Servers) Fence(_ context.Context, host string, _ int32, _ ha.Credentials) error {
	f, err := s.call(host, "fence "+host)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f.Fenced = true
	return nil
}

// SetSynchronous sets how many replicas host's commits wait for.
func (s *Servers) SetSynchronous(_ context.Context, host string, _ int32, _ ha.Credentials, n int32) error {
	f, err := s.call(host, fmt.Sprintf("set synchronous replicas of %s to %d", host, n))
	if err != nil {
		return err
	}
	if s.SynchronousLimit > 0 && n > s.SynchronousLimit {
		return fmt.Errorf("setting semi-synchronous replication on %s: %w", host,
			&ha.SynchronousUnsupportedError{Why: fmt.Sprintf("it waits for %d replica at most, not %d", s.SynchronousLimit, n)})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f.Synchronous = n
	return nil
}

// Terms are LogTerms.
func (s *Servers) Terms() ha.Terms { return s.LogTerms }

// Check refuses the first parameter, by name, of Refuse, and says which
// are read at start (AtStart).
func (s *Servers) Check(_ context.Context, host string, _ int32, _ ha.Credentials, params, _ map[string]string) (map[string]bool, error) {
	if _, err := s.call(host, "check parameters on "+host+": "+pairs(params)); err != nil {
		return nil, err
	}
	atStart := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(params)) {
		if msg, ok := s.Refuse[name]; ok {
			return nil, &ha.RejectedError{Name: name, Value: params[name], Message: msg}
		}
		atStart[name] = s.AtStart != nil && s.AtStart(name)
	}
	return atStart, nil
}

// Set records params on host, less reset.
func (s *Servers) Set(_ context.Context, host string, _ int32, _ ha.Credentials, params map[string]string, reset []string) error {
	call := "set parameters on " + host + ": " + pairs(params)
	if len(reset) > 0 {
		call += "; reset " + strings.Join(reset, " ")
	}
	if _, err := s.call(host, call); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Parameters == nil {
		s.Parameters = map[string]map[string]string{}
	}
	on := maps.Clone(s.Parameters[host])
	if on == nil {
		on = map[string]string{}
	}
	maps.Copy(on, params)
	for _, name := range reset {
		delete(on, name)
	}
	s.Parameters[host] = on
	return nil
}

// pairs says params as name=value, by name.
func pairs(params map[string]string) string {
	out := make([]string, 0, len(params))
	for _, name := range slices.Sorted(maps.Keys(params)) {
		out = append(out, name+"="+params[name])
	}
	return strings.Join(out, " ")
}

// PresentCertificate answers the serial number of the certificate host
// presents; when it is not serial, the server reloads, and presents what
// its files hold from then on.
func (s *Servers) PresentCertificate(_ context.Context, host string, _ int32, _ ha.Credentials, serial string) (string, bool, error) {
	if _, err := s.call(host, "present certificate "+serial+" on "+host); err != nil {
		return "", false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	presented := s.Presents[host]
	if presented == serial {
		return presented, false, nil
	}
	if f, ok := s.Files[host]; ok {
		s.Presents[host] = f
	}
	return presented, true, nil
}

// EnsureUser makes the monitoring user on host, unless it has it
// (MonitoringUsers).
func (s *Servers) EnsureUser(_ context.Context, host string, _ int32, _ ha.Credentials) (bool, error) {
	if _, err := s.call(host, "ensure monitoring user on "+host); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.MonitoringUsers[host] {
		return false, nil
	}
	if s.MonitoringUsers == nil {
		s.MonitoringUsers = map[string]bool{}
	}
	s.MonitoringUsers[host] = true
	return true, nil
}

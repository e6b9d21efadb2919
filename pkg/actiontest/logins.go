package actiontest

import (
	"context"
	"slices"
	"sync"

	"github.com/dbcontroller/database-controller/pkg/login"
)

// Logins are servers as package login meets them, by address: each takes
// the one password Password holds for it, and one with none does not
// answer. Login is their login.Func; it records every login, which Took
// returns.
type Logins struct {
	mu       sync.Mutex
	Password map[string]string
	logins   []string
}

// Login logs in to the server at host as login.Func does.
func (s *Logins) Login(_ context.Context, host string, _ int32, cred login.Credentials) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logins = append(s.logins, host+" "+cred.User+"/"+cred.Password+"@"+cred.Database)
	switch pw, ok := s.Password[host]; {
	case !ok:
		return context.DeadlineExceeded
	case pw != cred.Password:
		return &login.RefusedError{Message: `password authentication failed for user "` + cred.User + `"`}
	}
	return nil
}

// SetPassword makes the server at host take password, and answer.
func (s *Logins) SetPassword(host, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Password == nil {
		s.Password = map[string]string{}
	}
	s.Password[host] = password
}

// Took returns the logins since the last call, as "host user/password@database", sorted.
func (s *Logins) Took() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.logins
	s.logins = nil
	slices.Sort(out)
	return out
}

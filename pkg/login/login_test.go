package login_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	"github.com/dbcontroller/database-controller/pkg/login"
)

// forgetAfter is how long the Checker keeps a Database no pass gave it.
const forgetAfter = 2 * time.Hour

var key = types.NamespacedName{Namespace: "ns", Name: "orders"}

func target(password string, hosts ...string) login.Target {
	t := login.Target{Database: key, Engine: "postgresql", Port: 5432, Credentials: login.Credentials{User: "postgres", Password: password, Database: "orders"}}
	for k, h := range hosts {
		t.Servers = append(t.Servers, login.Server{Pod: "orders-" + string(rune('0'+k)), Host: h})
	}
	return t
}

type fixture struct {
	clock   *clocktesting.FakeClock
	servers *actiontest.Logins
	checker *login.Checker
	changed []types.NamespacedName
}

func newFixture() *fixture {
	f := &fixture{clock: clocktesting.NewFakeClock(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)),
		servers: &actiontest.Logins{}}
	f.checker = login.New(login.Config{Logins: map[string]login.Func{"postgresql": f.servers.Login}, Interval: 30 * time.Second, Clock: f.clock,
		Changed: func(n types.NamespacedName) { f.changed = append(f.changed, n) }})
	return f
}

// step checks what is due, and returns the logins it made and the
// Databases it said changed.
func (f *fixture) step(t *testing.T) ([]string, int) {
	t.Helper()
	f.checker.CheckDue(context.Background())
	n := len(f.changed)
	f.changed = nil
	return f.servers.Took(), n
}

func pods(v login.Verdict) []string {
	var out []string
	for _, r := range v.Refusals {
		out = append(out, r.Pod)
	}
	return out
}

func TestCheckerPace(t *testing.T) {
	f := newFixture()
	f.servers.SetPassword("10.0.0.1", "new")
	f.servers.SetPassword("10.0.0.2", "new")
	if v := f.checker.Check(target("old", "10.0.0.1", "10.0.0.2")); len(v.Refusals) != 0 || v.Generation != 0 {
		t.Fatalf("a Database not checked yet has verdict %+v, want none", v)
	}

	// A new Target is logged in to at once.
	logins, changed := f.step(t)
	if want := []string{"10.0.0.1 postgres/old@orders", "10.0.0.2 postgres/old@orders"}; !slices.Equal(logins, want) || changed != 1 {
		t.Fatalf("first check: logins %v, %d changes; want %v, 1", logins, changed, want)
	}
	v := f.checker.Check(target("old", "10.0.0.1", "10.0.0.2"))
	if got := pods(v); !slices.Equal(got, []string{"orders-0", "orders-1"}) || v.Refusals[0].Message != `password authentication failed for user "postgres"` {
		t.Fatalf("verdict %+v, want both servers refusing in the server's words", v)
	}
	if g := f.checker.Generation(key); g != v.Generation || g == 0 {
		t.Errorf("Generation = %d, want the verdict's, %d, and not 0", g, v.Generation)
	}

	// Not again within the interval; again once it passed, and the same
	// answer changes nothing.
	f.clock.Step(29 * time.Second)
	if logins, changed := f.step(t); len(logins) != 0 || changed != 0 {
		t.Fatalf("within the interval: logins %v, %d changes; want none", logins, changed)
	}
	f.clock.Step(time.Second)
	if logins, changed := f.step(t); len(logins) != 2 || changed != 0 {
		t.Fatalf("after the interval: logins %v, %d changes; want 2 logins, no change", logins, changed)
	}

	// The Secret changes: logged in to at once. Until then the verdict
	// stays, so that the status does not flap.
	f.clock.Step(time.Second)
	if v2 := f.checker.Check(target("new", "10.0.0.1", "10.0.0.2")); v2.Generation != v.Generation {
		t.Errorf("verdict before the new credentials were tried = %+v, want the last one %+v", v2, v)
	}
	logins, changed = f.step(t)
	if want := []string{"10.0.0.1 postgres/new@orders", "10.0.0.2 postgres/new@orders"}; !slices.Equal(logins, want) || changed != 1 {
		t.Fatalf("after the Secret changed: logins %v, %d changes; want %v, 1", logins, changed, want)
	}
	if v3 := f.checker.Check(target("new", "10.0.0.1", "10.0.0.2")); len(v3.Refusals) != 0 || v3.Generation <= v.Generation {
		t.Errorf("verdict once the servers took the credentials = %+v, want no refusal and a later generation than %d", v3, v.Generation)
	}
}

func TestServerThatDoesNotAnswerKeepsItsLastAnswer(t *testing.T) {
	f := newFixture()
	f.servers.SetPassword("10.0.0.1", "new")
	f.servers.SetPassword("10.0.0.2", "new")
	f.checker.Check(target("old", "10.0.0.1", "10.0.0.2"))
	f.step(t)
	delete(f.servers.Password, "10.0.0.1")
	f.servers.SetPassword("10.0.0.2", "old")
	f.clock.Step(30 * time.Second)
	if _, changed := f.step(t); changed != 1 {
		t.Fatalf("orders-1 took the credentials: %d changes, want 1", changed)
	}
	if got := pods(f.checker.Check(target("old", "10.0.0.1", "10.0.0.2"))); !slices.Equal(got, []string{"orders-0"}) {
		t.Errorf("refusals %v, want orders-0's kept: it did not answer, which says nothing of the credentials", got)
	}

	// A server never heard is no refusal.
	g := newFixture()
	g.checker.Check(target("old", "10.0.0.9"))
	if _, changed := g.step(t); changed != 0 {
		t.Errorf("a server that never answered changed the verdict")
	}
}

func TestForgottenDatabasesAreNotChecked(t *testing.T) {
	f := newFixture()
	f.checker.Check(target("old", "10.0.0.1"))
	f.checker.Forget(key)
	if logins, _ := f.step(t); len(logins) != 0 {
		t.Errorf("a forgotten Database was logged in to: %v", logins)
	}

	// One no pass gave its Target for two hours is forgotten too.
	f.servers.SetPassword("10.0.0.1", "new")
	f.checker.Check(target("old", "10.0.0.1"))
	f.step(t)
	before := f.checker.Generation(key)
	f.clock.Step(forgetAfter + time.Second)
	if logins, _ := f.step(t); len(logins) != 0 {
		t.Errorf("a Database no pass saw for %s was logged in to: %v", forgetAfter, logins)
	}
	if g := f.checker.Generation(key); g != 0 {
		t.Errorf("Generation of a forgotten Database = %d, want 0", g)
	}

	// Generations are not reused: a Database seen again cannot match a
	// pass that settled on its old verdict.
	f.checker.Check(target("old", "10.0.0.1"))
	f.step(t)
	if g := f.checker.Generation(key); g <= before {
		t.Errorf("Generation after the Database came back = %d, want more than %d", g, before)
	}
}

func TestEngineWithoutLoginIsNotChecked(t *testing.T) {
	f := newFixture()
	if f.checker.Checks("mongodb") || !f.checker.Checks("postgresql") {
		t.Fatalf("Checks: mongodb %v, postgresql %v; want false, true", f.checker.Checks("mongodb"), f.checker.Checks("postgresql"))
	}
}

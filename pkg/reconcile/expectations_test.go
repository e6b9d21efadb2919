package reconcile

import (
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clk := testclock.NewFakePassiveClock(start)
	e := NewExpectations(clk, time.Minute)
	secret := ChildKey{Kind: "Secret", Namespace: "default", Name: "orders-credentials"}
	sts := ChildKey{Kind: "StatefulSet", Namespace: "default", Name: "orders"}

	if e.Pending(secret) {
		t.Fatal("Pending before Created")
	}
	e.Created(secret, "7")
	e.Created(sts, "8")
	if !e.Pending(secret) || !e.Pending(sts) {
		t.Fatal("not Pending right after Created")
	}

	// Observed clears one entry, and only that one.
	e.Observed(sts)
	if e.Pending(sts) || !e.Pending(secret) {
		t.Fatalf("after Observed(sts): Pending(sts)=%v Pending(secret)=%v, want false, true", e.Pending(sts), e.Pending(secret))
	}

	// Within the TTL the entry holds; past it, it is forgotten on a look.
	clk.SetTime(start.Add(time.Minute))
	if !e.Pending(secret) {
		t.Fatal("forgotten at exactly the TTL")
	}
	clk.SetTime(start.Add(2 * time.Minute))
	if e.Pending(secret) {
		t.Fatal("still Pending after the TTL")
	}
	if n := e.Len(); n != 0 {
		t.Fatalf("Len = %d after the expired entry was looked at, want 0", n)
	}
}

// An add is an echo only at the resourceVersion the create returned, and
// only while no pass looked for the child: a pass that found it missing
// waits for that add.
func TestExpectationsEcho(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC))
	secret := ChildKey{Kind: "Secret", Namespace: "default", Name: "orders-credentials"}
	for _, tc := range []struct {
		name string
		// before runs on expectations that hold secret created at "7".
		before      func(e *Expectations)
		addAt       string
		echo        bool
		pendingThen bool
	}{
		{name: "the add as created", before: func(*Expectations) {}, addAt: "7", echo: true, pendingThen: false},
		{name: "changed since", before: func(*Expectations) {}, addAt: "9", echo: false, pendingThen: true},
		{name: "a pass looked for it", before: func(e *Expectations) { e.Look(secret) }, addAt: "7", echo: false, pendingThen: true},
		{name: "looked for, then created again", before: func(e *Expectations) { e.Look(secret); e.Created(secret, "7") }, addAt: "7", echo: true, pendingThen: false},
		{name: "observed already", before: func(e *Expectations) { e.Observed(secret) }, addAt: "7", echo: false, pendingThen: false},
		{name: "the TTL passed", before: func(*Expectations) { clk.SetTime(clk.Now().Add(2 * time.Minute)) }, addAt: "7", echo: false, pendingThen: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewExpectations(clk, time.Minute)
			e.Created(secret, "7")
			tc.before(e)
			if got := e.Echo(secret, tc.addAt); got != tc.echo {
				t.Errorf("Echo = %v, want %v", got, tc.echo)
			}
			if got := e.Pending(secret); got != tc.pendingThen {
				t.Errorf("Pending after the add = %v, want %v", got, tc.pendingThen)
			}
		})
	}

	// A look at a child not pending is no look: its later echo is one.
	e := NewExpectations(clk, time.Minute)
	e.Look(secret)
	e.Created(secret, "7")
	if !e.Echo(secret, "7") {
		t.Error("a look before the create held back the echo of the create")
	}
	// No resourceVersion (a client that sets none) is never an echo.
	e.Created(secret, "")
	if e.Echo(secret, "") {
		t.Error("an add with no resourceVersion taken for an echo")
	}
	// The looked-for add goes through once; the pass observes it.
	e.Created(secret, "7")
	e.Look(secret)
	if e.Echo(secret, "7") || !e.Pending(secret) {
		t.Error("the add a pass looked for was taken for an echo")
	}
	e.Observed(secret)
	if n := e.Len(); n != 0 {
		t.Errorf("Len = %d after Observed, want 0", n)
	}
}

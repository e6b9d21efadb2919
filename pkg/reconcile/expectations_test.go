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
	e.Created(secret)
	e.Created(sts)
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

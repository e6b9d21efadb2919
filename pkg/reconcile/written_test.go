package reconcile

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/ttl"
)

// The status a pass wrote stands in for an older one the cache still
// holds, through a chain of writes made on a lagging cache, and is
// forgotten once the cache shows it or anything later.
func TestWrittenStatusStandsInForAnOlderCache(t *testing.T) {
	at := func(rv string, phase dbv1alpha1.Phase) *dbv1alpha1.Database {
		return &dbv1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "orders", UID: "uid-1", ResourceVersion: rv},
			Status: dbv1alpha1.DatabaseStatus{Phase: phase}}
	}
	clock := testclock.NewFakePassiveClock(testNow)
	newReconciler := func() *Reconciler {
		return &Reconciler{written: ttl.NewSet[types.UID, writtenStatus](clock, writtenTTL)}
	}
	phaseSeen := func(r *Reconciler, cached *dbv1alpha1.Database) dbv1alpha1.Phase {
		return r.asWritten(cached).Status.Phase
	}

	r := newReconciler()
	if got := phaseSeen(r, at("1", "Updating")); got != "Updating" {
		t.Errorf("nothing written: the pass sees %s, want the cache's Updating", got)
	}
	// A pass over version 1 writes Running (version 2); the next pass,
	// on a cache still at 1, writes Degraded (version 3).
	r.rememberWritten(at("1", ""), "1", "2", dbv1alpha1.DatabaseStatus{Phase: "Running"})
	if got := phaseSeen(r, at("1", "Updating")); got != "Running" {
		t.Errorf("cache at 1, Running written over it: the pass sees %s", got)
	}
	r.rememberWritten(at("1", ""), "1", "3", dbv1alpha1.DatabaseStatus{Phase: "Degraded"})
	for _, rv := range []string{"1", "2"} {
		if got := phaseSeen(r, at(rv, "Updating")); got != "Degraded" {
			t.Errorf("cache at %s, Degraded written as 3: the pass sees %s", rv, got)
		}
	}
	// The cache shows the write: forgotten.
	if got := phaseSeen(r, at("3", "Degraded")); got != "Degraded" {
		t.Errorf("cache at 3: the pass sees %s", got)
	}
	if _, ok := r.written.Get("uid-1"); ok {
		t.Error("the write is remembered after the cache showed it")
	}

	// The cache receives the write before any pass: forgotten then.
	r.rememberWritten(at("3", ""), "3", "4", dbv1alpha1.DatabaseStatus{Phase: "Running"})
	r.Observed(at("3", "Degraded"))
	if _, ok := r.written.Get("uid-1"); !ok {
		t.Error("the write was forgotten when the cache received an older version")
	}
	r.Observed(at("4", "Running"))
	if _, ok := r.written.Get("uid-1"); ok {
		t.Error("the write is remembered after the cache received it")
	}

	// The race CI met: the cache receives a pass's first write (the
	// target recorded, version 11) while the pass runs, and forgets it;
	// the pass's last write (version 12) replaced 11; the next pass reads
	// 11, and works from 12's status.
	r = newReconciler()
	r.rememberWritten(at("10", ""), "10", "11", dbv1alpha1.DatabaseStatus{Phase: "Updating"})
	r.Observed(at("11", "Updating"))
	r.rememberWritten(at("11", ""), "11", "12", dbv1alpha1.DatabaseStatus{Phase: "Running"})
	if got := phaseSeen(r, at("11", "Updating")); got != "Running" {
		t.Errorf("cache at 11, Running written as 12: the pass sees %s", got)
	}
	// A version someone else made between a pass's start and its write
	// is older than the write too: resourceVersions compare.
	r = newReconciler()
	r.rememberWritten(at("20", ""), "20", "25", dbv1alpha1.DatabaseStatus{Phase: "Running"})
	r.Observed(at("23", "Updating"))
	if got := phaseSeen(r, at("23", "Updating")); got != "Running" {
		t.Errorf("cache at 23, someone else's, Running written as 25: the pass sees %s", got)
	}

	// A later version by someone else: forgotten, the cache wins.
	r = newReconciler()
	r.rememberWritten(at("1", ""), "1", "2", dbv1alpha1.DatabaseStatus{Phase: "Running"})
	if got := phaseSeen(r, at("9", "Stopped")); got != "Stopped" {
		t.Errorf("cache at 9, a later version: the pass sees %s", got)
	}
	// Another Database of the same name (another UID) is not this one.
	r.rememberWritten(at("1", ""), "1", "2", dbv1alpha1.DatabaseStatus{Phase: "Running"})
	other := at("1", "Provisioning")
	other.UID = "uid-2"
	if got := phaseSeen(r, other); got != "Provisioning" {
		t.Errorf("another UID: the pass sees %s", got)
	}
	// Remembered for writtenTTL at most.
	clock.SetTime(testNow.Add(writtenTTL + time.Second))
	if got := phaseSeen(r, at("1", "Updating")); got != "Updating" {
		t.Errorf("after writtenTTL: the pass sees %s, want the cache's", got)
	}
}

package main

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// The cached objects are the controller's own count when it exports one,
// and otherwise what it labelled, with the Databases, said so.
func TestCachedObjects(t *testing.T) {
	s, err := parseText(strings.NewReader(`database_controller_cached_objects{kind="Secret"} 3000
database_controller_cached_objects{kind="Pod"} 1000
database_controller_cached_objects{kind="Node"} 0
database_controller_cached_objects{kind="Database"} 1000
`), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cr := &controllerRun{mSteady: s, children: map[string]int{"Secrets": 3000, "Pods": 1000, "Services": 2000}}
	label, byKind, all := cachedObjects(cr, 1000)
	if want := map[string]float64{"Secret": 3000, "Pod": 1000, "Database": 1000}; !reflect.DeepEqual(byKind, want) || all != 5000 ||
		!strings.Contains(label, "its database_controller_cached_objects") {
		t.Errorf("with the metric: %q %v %v, want its own count, 5000, none of 0", label, byKind, all)
	}
	cr.mSteady = &scrape{}
	label, byKind, all = cachedObjects(cr, 1000)
	if want := map[string]float64{"Secrets": 3000, "Pods": 1000, "Services": 2000, "Databases": 1000}; !reflect.DeepEqual(byKind, want) || all != 7000 ||
		!strings.Contains(label, "exports no database_controller_cached_objects") {
		t.Errorf("without the metric: %q %v %v, want the labelled objects and the Databases, 7000", label, byKind, all)
	}
}

func TestSampleInterval(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 300: time.Second, 1000: time.Second, 2500: 2500 * time.Millisecond, 5000: 5 * time.Second} {
		if got := sampleInterval(n); got != want {
			t.Errorf("sampleInterval(%d) = %s, want %s", n, got, want)
		}
	}
}

// A run's claim waits are summed up by their median, 90th percentile and
// longest; a run that saw no claim says so.
func TestClaimWaits(t *testing.T) {
	var waits []time.Duration
	for i := 1; i <= 11; i++ {
		waits = append(waits, time.Duration(i)*time.Second)
	}
	for _, tc := range []struct {
		waits []time.Duration
		want  string
	}{
		{nil, "–"},
		{[]time.Duration{1500 * time.Millisecond}, "1.5 s / 1.5 s / 1.5 s"},
		{waits, "6.0 s / 10.0 s / 11.0 s"},
	} {
		if got := claimWaits(tc.waits); got != tc.want {
			t.Errorf("claimWaits(%v) = %q, want %q", tc.waits, got, tc.want)
		}
	}
}

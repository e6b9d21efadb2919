package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

const exposition = `# HELP database_controller_reconcile_duration_seconds Duration of a Database sync, by result.
# TYPE database_controller_reconcile_duration_seconds histogram
database_controller_reconcile_duration_seconds_bucket{result="success",le="0.001"} 10
database_controller_reconcile_duration_seconds_bucket{result="success",le="0.002"} 60
database_controller_reconcile_duration_seconds_bucket{result="success",le="0.004"} 90
database_controller_reconcile_duration_seconds_bucket{result="success",le="+Inf"} 100
database_controller_reconcile_duration_seconds_sum{result="success"} 0.2
database_controller_reconcile_duration_seconds_count{result="success"} 100
rest_client_requests_by_resource_total{resource="databases/status",verb="PATCH"} 7
rest_client_requests_by_resource_total{resource="secrets",verb="POST"} 3
workqueue_depth{name="databases"} 4
weird{a="x\"y",b="z"} 1
`

func TestParseAndSum(t *testing.T) {
	s, err := parseText(strings.NewReader(exposition), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.sum("rest_client_requests_by_resource_total", map[string]string{"verb": "PATCH"}); got != 7 {
		t.Errorf("PATCH = %v, want 7", got)
	}
	if got := s.sum("rest_client_requests_by_resource_total", nil); got != 10 {
		t.Errorf("all = %v, want 10", got)
	}
	if got := s.byLabels("rest_client_requests_by_resource_total", "verb", "resource")["POST\tsecrets"]; got != 3 {
		t.Errorf("POST secrets = %v, want 3", got)
	}
	if got := s.sum("weird", map[string]string{"a": `x"y`}); got != 1 {
		t.Errorf("escaped label: %v, want 1", got)
	}
}

func TestQuantile(t *testing.T) {
	s, err := parseText(strings.NewReader(exposition), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	h := s.histogram("database_controller_reconcile_duration_seconds", nil)
	// Rank 50 of 100 lies in (0.001, 0.002], 40 of its 50 observations in.
	if got, want := h.quantile(0.5), 0.001+0.001*40/50; math.Abs(got-want) > 1e-12 {
		t.Errorf("p50 = %v, want %v", got, want)
	}
	// Rank 99 lies in the +Inf bucket: the largest finite bound.
	if got := h.quantile(0.99); got != 0.004 {
		t.Errorf("p99 = %v, want 0.004", got)
	}
	if got := h.minus(h).quantile(0.5); !math.IsNaN(got) {
		t.Errorf("empty histogram quantile = %v, want NaN", got)
	}
}

func TestCurve(t *testing.T) {
	c := curve{time.Second, 2 * time.Second, 4 * time.Second}
	if got := c.last(3); got != 4*time.Second {
		t.Errorf("last(3) = %v", got)
	}
	if got := c.last(4); got != -1 {
		t.Errorf("last(4) = %v, want -1", got)
	}
	if got := c.at(2 * time.Second); got != 2 {
		t.Errorf("at(2s) = %d, want 2", got)
	}
}

package main

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// mustParse is the scrape of text, in the Prometheus text format.
func mustParse(t *testing.T, text string) *scrape {
	t.Helper()
	s, err := parseText(strings.NewReader(text), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestControlPlaneRequests(t *testing.T) {
	cp := controlPlane{
		start: mustParse(t, `apiserver_request_total{code="201",verb="POST",resource="pods",subresource=""} 10
apiserver_request_total{code="200",verb="PATCH",resource="pods",subresource="status"} 4
`),
		running: mustParse(t, `apiserver_request_total{code="201",verb="POST",resource="pods",subresource=""} 30
apiserver_request_total{code="409",verb="POST",resource="pods",subresource=""} 2
apiserver_request_total{code="200",verb="PATCH",resource="pods",subresource="status"} 9
apiserver_request_total{code="200",verb="APPLY",resource="databases",subresource="status"} 7
`),
	}
	want := map[string]float64{"POST\tpods": 22, "PATCH\tpods/status": 5, "APPLY\tdatabases/status": 7}
	if got := cp.requests(); !reflect.DeepEqual(got, want) {
		t.Errorf("requests() = %v, want %v", got, want)
	}
	if got := (&controlPlane{running: cp.running}).requests(); got != nil {
		t.Errorf("requests() without the first scrape = %v, want nil", got)
	}
}

func TestDifferences(t *testing.T) {
	floor := map[string]float64{"a": 10, "b": 5, "same": 3}
	ctrl := map[string]float64{"a": 12, "b": 1, "c": 4, "same": 3}
	rows, ft, ct := differences(floor, ctrl, 2)
	want := []diffRow{{key: "b", floor: 5, ctrl: 1}, {key: "c", floor: 0, ctrl: 4}}
	if !reflect.DeepEqual(rows, want) || ft != 18 || ct != 20 {
		t.Errorf("differences = %v, %v, %v; want %v, 18, 20", rows, ft, ct, want)
	}
}

// kcmScrape is kube-controller-manager's /metrics with the claims queue's
// counters at adds items, waitSum and workSum seconds, and 3 items added
// to the volumes queue, which has no histograms.
func kcmScrape(t *testing.T, adds, waitSum, workSum float64) *scrape {
	t.Helper()
	return mustParse(t, fmt.Sprintf(`workqueue_adds_total{name="claims"} %[1]g
workqueue_queue_duration_seconds_sum{name="claims"} %[2]g
workqueue_queue_duration_seconds_count{name="claims"} %[1]g
workqueue_work_duration_seconds_sum{name="claims"} %[3]g
workqueue_work_duration_seconds_count{name="claims"} %[1]g
workqueue_adds_total{name="volumes"} 3
`, adds, waitSum, workSum))
}

func TestControlPlaneQueue(t *testing.T) {
	cp := controlPlane{kcmStart: kcmScrape(t, 10, 1, 0.5), kcmRunning: kcmScrape(t, 110, 201, 3.5)}
	if got, want := cp.queue("claims"), (queueStats{adds: 100, meanWait: 2, meanWork: 0.03}); got != want {
		t.Errorf("queue(claims) = %+v, want %+v", got, want)
	}
	if got, want := cp.queue("volumes"), (queueStats{}); got != want {
		t.Errorf("queue(volumes) = %+v, want %+v", got, want)
	}
}

func TestCountEvents(t *testing.T) {
	var cp controlPlane
	cp.countEvents([]corev1.Event{
		{Reason: "Scheduled", Source: corev1.EventSource{Component: "default-scheduler"}},
		{Reason: "Scheduled", ReportingController: "default-scheduler", Count: 3},
		{Reason: "Created", ReportingController: "database-controller", Source: corev1.EventSource{Component: "other"}, Count: 1},
	})
	want := map[string]int{"default-scheduler\tScheduled": 4, "database-controller\tCreated": 1}
	if !reflect.DeepEqual(cp.events, want) {
		t.Errorf("events = %v, want %v", cp.events, want)
	}
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// controlPlane is what a run measures of the control plane itself, the
// same way in both runs: kube-apiserver's request counters when the first
// Database create is sent and when all are Running, and the events in the
// run's namespace at its end. They say what work the run gave every
// component (kube-controller-manager's, the scheduler's, kwok's requests
// as well as the controller's or the floor's), not only its own.
type controlPlane struct {
	start, running *scrape
	// events are the namespace's events with their counts, keyed by the
	// component that reported them and their reason, joined with a tab.
	events map[string]int
}

// scrapeAPIServer reads kube-apiserver's /metrics.
func scrapeAPIServer(ctx context.Context, kube kubernetes.Interface) (*scrape, error) {
	b, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver's /metrics: %w", err)
	}
	return parseText(bytes.NewReader(b), time.Now())
}

// measureStart and measureRunning take the scrapes; a failure is logged,
// and leaves the report without the table.
func (cp *controlPlane) measureStart(ctx context.Context, kube kubernetes.Interface, run string) {
	var err error
	if cp.start, err = scrapeAPIServer(ctx, kube); err != nil {
		logf("%s: %v", run, err)
	}
}

func (cp *controlPlane) measureRunning(ctx context.Context, kube kubernetes.Interface, run string) {
	var err error
	if cp.running, err = scrapeAPIServer(ctx, kube); err != nil {
		logf("%s: %v", run, err)
	}
}

// countEvents reads the events of namespace ns, by the component that
// reported them and their reason, with their counts.
func (cp *controlPlane) countEvents(ctx context.Context, kube kubernetes.Interface, ns, run string) {
	evs, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		logf("%s: the namespace's events: %v", run, err)
		return
	}
	cp.events = map[string]int{}
	for _, e := range evs.Items {
		by := e.ReportingController
		if by == "" {
			by = e.Source.Component
		}
		cp.events[by+"\t"+e.Reason] += int(max(e.Count, 1))
	}
}

// requests are the requests kube-apiserver served between the two
// scrapes, keyed by verb and resource (with its subresource after a
// slash), joined with a tab; nil without both scrapes.
func (cp *controlPlane) requests() map[string]float64 {
	if cp.start == nil || cp.running == nil {
		return nil
	}
	keys := []string{"verb", "resource", "subresource"}
	before := cp.start.byLabels("apiserver_request_total", keys...)
	out := map[string]float64{}
	for k, v := range cp.running.byLabels("apiserver_request_total", keys...) {
		verb, resource, sub := splitKey3(k)
		if sub != "" {
			resource += "/" + sub
		}
		out[verb+"\t"+resource] += v - before[k]
	}
	return out
}

func splitKey3(k string) (a, b, c string) {
	parts := strings.SplitN(k, "\t", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return parts[0], parts[1], parts[2]
}

// diffRow is one key of two runs' counts.
type diffRow struct {
	key         string
	floor, ctrl float64
}

// differences are the keys whose counts differ between the two runs,
// largest difference first (then by key), at most limit of them, and the
// totals of every key.
func differences(floor, ctrl map[string]float64, limit int) (rows []diffRow, floorTotal, ctrlTotal float64) {
	keys := map[string]bool{}
	for k := range floor {
		keys[k] = true
	}
	for k := range ctrl {
		keys[k] = true
	}
	for k := range keys {
		f, c := floor[k], ctrl[k]
		floorTotal += f
		ctrlTotal += c
		if f != c {
			rows = append(rows, diffRow{key: k, floor: f, ctrl: c})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		di, dj := math.Abs(rows[i].ctrl-rows[i].floor), math.Abs(rows[j].ctrl-rows[j].floor)
		if di != dj {
			return di > dj
		}
		return rows[i].key < rows[j].key
	})
	if len(rows) > limit {
		rows = rows[:limit]
	}
	return rows, floorTotal, ctrlTotal
}

// controlPlaneRows is how many rows of differences each table shows.
const controlPlaneRows = 25

// writeControlPlane writes the report's section on the control plane's
// work in each run.
func writeControlPlane(w func(string, ...any), fr, cr *phase) {
	freq, creq := fr.controlPlane.requests(), cr.controlPlane.requests()
	if freq == nil && creq == nil && fr.controlPlane.events == nil && cr.controlPlane.events == nil {
		return
	}
	w("## The control plane's work in each run\n\n")
	if freq != nil && creq != nil {
		w("The requests kube-apiserver served from the first Database create to all Running, from its `apiserver_request_total` (every client's: the controller's or the floor's, kube-controller-manager's, the scheduler's, kwok's, the benchmark's own; a WATCH is counted when it ends, APPLY is a server-side apply), by verb and resource, where the two runs differ, the largest differences first (at most %d rows):\n\n", controlPlaneRows)
		rows, ft, ct := differences(freq, creq, controlPlaneRows)
		var t table
		t.header("verb", "resource", "floor run", "controller run", "controller − floor")
		for _, r := range rows {
			verb, resource, _ := strings.Cut(r.key, "\t")
			t.row(verb, resource, num(r.floor), num(r.ctrl), fmt.Sprintf("%+.0f", r.ctrl-r.floor))
		}
		t.row("**all**", "", num(ft), num(ct), fmt.Sprintf("%+.0f", ct-ft))
		w("%s\n", t.b.String())
	}
	if fr.controlPlane.events != nil && cr.controlPlane.events != nil {
		w("The events in the run's namespace at its end (a LIST; each with its count), by the component that reported them and their reason:\n\n")
		toFloat := func(m map[string]int) map[string]float64 {
			out := map[string]float64{}
			for k, v := range m {
				out[k] = float64(v)
			}
			return out
		}
		fe, ce := toFloat(fr.controlPlane.events), toFloat(cr.controlPlane.events)
		keys := make([]string, 0, len(fe)+len(ce))
		for k := range fe {
			keys = append(keys, k)
		}
		for k := range ce {
			if _, ok := fe[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		var t table
		t.header("reported by", "reason", "floor run", "controller run")
		var ft, ct float64
		for _, k := range keys {
			by, reason, _ := strings.Cut(k, "\t")
			t.row(orUnknown(by), reason, num(fe[k]), num(ce[k]))
			ft += fe[k]
			ct += ce[k]
		}
		t.row("**all**", "", num(ft), num(ct))
		w("%s\n", t.b.String())
	}
}

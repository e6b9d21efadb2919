package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// controlPlane is what a run measures of the control plane itself, the
// same way in both runs: kube-apiserver's request counters and
// kube-controller-manager's metrics when the first Database create is sent
// and when all are Running, and the events in the run's namespace at its
// end. They say what work the run gave every component
// (kube-controller-manager's, the scheduler's, kwok's requests as well as
// the controller's or the floor's), not only its own, and how its volume
// binding, which the pods wait for, kept up.
type controlPlane struct {
	start, running       *scrape
	kcmStart, kcmRunning *scrape
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

// scrapeKCM reads kube-controller-manager's /metrics on its secure port
// with the admin credentials of base; nil when its port is not known.
func scrapeKCM(ctx context.Context, c config, base *rest.Config) (*scrape, error) {
	if c.kcmPort == 0 {
		return nil, nil
	}
	cfg := rest.CopyConfig(base)
	cfg.Host = fmt.Sprintf("https://127.0.0.1:%d", c.kcmPort)
	// Its serving certificate is its own, self-signed (--cert-dir).
	cfg.CAData, cfg.CAFile, cfg.Insecure = nil, "", true
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager's /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("kube-controller-manager's /metrics: %s", resp.Status)
	}
	return parseText(resp.Body, time.Now())
}

// measure reads kube-apiserver's and kube-controller-manager's metrics; a
// failure is logged, and leaves the report without that table.
func measure(ctx context.Context, c config, cfg *rest.Config, kube kubernetes.Interface, run string) (apiserver, kcm *scrape) {
	var err error
	if apiserver, err = scrapeAPIServer(ctx, kube); err != nil {
		logf("%s: %v", run, err)
	}
	if kcm, err = scrapeKCM(ctx, c, cfg); err != nil {
		logf("%s: %v", run, err)
	}
	return apiserver, kcm
}

// volumeQueues are the work queues of kube-controller-manager's
// persistentvolume controller, which binds claims and volumes.
var volumeQueues = []string{"claims", "volumes"}

// queueStats is what a work queue did between the two scrapes: items
// added, and the mean time an item waited in it and took to process.
type queueStats struct {
	adds, meanWait, meanWork float64
}

func (cp *controlPlane) queue(name string) queueStats {
	if cp.kcmStart == nil || cp.kcmRunning == nil {
		return queueStats{}
	}
	want := map[string]string{"name": name}
	delta := func(metric string) float64 { return cp.kcmRunning.sum(metric, want) - cp.kcmStart.sum(metric, want) }
	q := queueStats{adds: delta("workqueue_adds_total")}
	if n := delta("workqueue_queue_duration_seconds_count"); n > 0 {
		q.meanWait = delta("workqueue_queue_duration_seconds_sum") / n
	}
	if n := delta("workqueue_work_duration_seconds_count"); n > 0 {
		q.meanWork = delta("workqueue_work_duration_seconds_sum") / n
	}
	return q
}

// countEvents counts the events of the run's namespace, by the component
// that reported them and their reason, with their counts.
func (cp *controlPlane) countEvents(events []corev1.Event) {
	cp.events = map[string]int{}
	for _, e := range events {
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
	haveRequests := freq != nil && creq != nil
	haveQueues := fr.controlPlane.kcmRunning != nil && cr.controlPlane.kcmRunning != nil
	haveEvents := fr.controlPlane.events != nil && cr.controlPlane.events != nil
	if !haveRequests && !haveQueues && !haveEvents {
		return
	}
	w("## The control plane's work in each run\n\n")
	if haveRequests {
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
	if haveQueues {
		w("kube-controller-manager's persistentvolume controller binds each claim to its volume, one at a time per queue: its work queues from the first create to all Running (its `workqueue_*` metrics; an item waits in the queue, then is processed, which is mostly its requests to kube-apiserver):\n\n")
		var t table
		t.header("queue", "items added, floor run", "controller run", "mean wait in the queue, floor run", "controller run", "mean processing, floor run", "controller run")
		for _, name := range volumeQueues {
			f, c := fr.controlPlane.queue(name), cr.controlPlane.queue(name)
			t.row(name, num(f.adds), num(c.adds), ms(f.meanWait), ms(c.meanWait), ms(f.meanWork), ms(c.meanWork))
		}
		w("%s\n", t.b.String())
	}
	if haveEvents {
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

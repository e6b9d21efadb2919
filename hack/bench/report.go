package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

const mib = 1024 * 1024

// designMinimumWrites is the number of writes a new Database needs at the
// least, with TLS (on by default for every engine); see the report's
// explanation.
const designMinimumWrites = 8

// Targets of issue 13: convergence within 1.05× the floor; RSS at most
// 80 MiB at 1,000 Databases, growing by at most 20 KiB per Database more.
const (
	targetRatio       = 1.05
	targetRSSAt1000   = 80 * mib
	targetRSSPerMore  = 20 * 1024
	targetRSSBaseline = 1000
)

// rssBudget is the RSS target at n Databases.
func rssBudget(n int) float64 {
	return targetRSSAt1000 + float64(max(n-targetRSSBaseline, 0))*targetRSSPerMore
}

var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true}

type reqRow struct {
	verb, resource                      string
	startup, converge, trailing, steady float64
}

// controllerRequests is the controller's requests by verb and resource in
// each window, from its rest_client_requests_by_resource_total.
func controllerRequests(cr *controllerRun) []reqRow {
	const name = "rest_client_requests_by_resource_total"
	ready := cr.mReady.byLabels(name, "verb", "resource")
	running := cr.mRunning.byLabels(name, "verb", "resource")
	settled := cr.mSettled.byLabels(name, "verb", "resource")
	steady := cr.mSteady.byLabels(name, "verb", "resource")
	keys := map[string]bool{}
	for _, m := range []map[string]float64{ready, running, settled, steady} {
		for k := range m {
			keys[k] = true
		}
	}
	var rows []reqRow
	for k := range keys {
		verb, resource, _ := strings.Cut(k, "\t")
		rows = append(rows, reqRow{verb: verb, resource: resource,
			startup: ready[k], converge: running[k] - ready[k], trailing: settled[k] - running[k], steady: steady[k] - settled[k]})
	}
	sort.Slice(rows, func(i, j int) bool {
		wi, wj := writeVerbs[rows[i].verb], writeVerbs[rows[j].verb]
		if wi != wj {
			return wi
		}
		if rows[i].verb != rows[j].verb {
			return rows[i].verb < rows[j].verb
		}
		return rows[i].resource < rows[j].resource
	})
	return rows
}

func sumWrites(rows []reqRow, pick func(reqRow) float64, filter func(reqRow) bool) float64 {
	var n float64
	for _, r := range rows {
		if writeVerbs[r.verb] && (filter == nil || filter(r)) {
			n += pick(r)
		}
	}
	return n
}

func isEvent(r reqRow) bool { return r.resource == "events" }

type table struct {
	b strings.Builder
}

func (t *table) header(cols ...string) {
	t.row(cols...)
	seps := make([]string, len(cols))
	for i := range cols {
		if i == 0 {
			seps[i] = "---"
		} else {
			seps[i] = "---:"
		}
	}
	t.row(seps...)
}

func (t *table) row(cols ...string) {
	t.b.WriteString("| " + strings.Join(cols, " | ") + " |\n")
}

func num(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func secs(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func ms(seconds float64) string {
	if math.IsNaN(seconds) {
		return "–"
	}
	if seconds < 1 {
		return fmt.Sprintf("%.1f ms", seconds*1000)
	}
	return fmt.Sprintf("%.2f s", seconds)
}

func ratio(a, b time.Duration) string {
	if a < 0 || b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a.Seconds()/b.Seconds())
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

// renderReport writes the markdown report.
func renderReport(c config, env environment, fr *floorRun, cr *controllerRun, chart string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	n := float64(c.n)
	rows := controllerRequests(cr)
	// The writes a new Database causes: those until all are Running and
	// those that trail it.
	newDB := func(r reqRow) float64 { return r.converge + r.trailing }
	convWrites := sumWrites(rows, newDB, nil)
	convEventWrites := sumWrites(rows, newDB, isEvent)
	trailingWrites := sumWrites(rows, func(r reqRow) float64 { return r.trailing }, nil)
	steadyWrites := sumWrites(rows, func(r reqRow) float64 { return r.steady }, nil)
	steadyEventWrites := sumWrites(rows, func(r reqRow) float64 { return r.steady }, isEvent)
	floorRows := fr.counter.rows()
	var floorWrites float64
	for _, r := range floorRows {
		if writeVerbs[r.verb] {
			floorWrites += r.n
		}
	}
	var maxRSS, maxHeap, maxInuse, maxDepth float64
	var maxDepthAt time.Duration
	for _, s := range cr.samples {
		maxRSS = math.Max(maxRSS, s.rss)
		maxHeap = math.Max(maxHeap, s.heapAlloc)
		maxInuse = math.Max(maxInuse, s.heapInuse)
		if s.depth > maxDepth {
			maxDepth, maxDepthAt = s.depth, s.at.Sub(cr.t0)
		}
	}
	var last sample
	if len(cr.samples) > 0 {
		last = cr.samples[len(cr.samples)-1]
	}
	peakRSS := cr.peakRSS
	if peakRSS == 0 {
		peakRSS = maxRSS
	}

	w("# Scale benchmark: %d Databases on the local control plane\n\n", c.n)
	w("Produced by `%s` on %s, on a %d-core machine (%s, %.0f GiB), and written by the program itself (hack/bench). ",
		c.command, env.date, env.cpus, env.cpuModel, env.memTotal/(1024*mib))
	w("Controller %s; Kubernetes %s (kube-apiserver, kube-controller-manager, kube-scheduler built from source by hack/tools/build.sh); %s; %s; %s; client-go %s.\n\n",
		orUnknown(env.controllerVersion), orUnknown(env.apiserver), env.etcdVer, env.kwok, env.goVersion, orUnknown(env.clientGo))

	w("## Headline\n\n")
	var t table
	t.header("", "controller", "floor", "controller ÷ floor")
	t.row(fmt.Sprintf("**All %d Databases Running**", c.n), "**"+secs(cr.allRunning)+"**", "**"+secs(fr.allRunning)+"**", "**"+ratio(cr.allRunning, fr.allRunning)+"**")
	half, ninety := (c.n+1)/2, (c.n*9+9)/10
	t.row(fmt.Sprintf("Half (%d) of the Databases Running", half), secs(cr.running.last(half)), secs(fr.running.last(half)), ratio(cr.running.last(half), fr.running.last(half)))
	t.row(fmt.Sprintf("90%% (%d) of the Databases Running", ninety), secs(cr.running.last(ninety)), secs(fr.running.last(ninety)), ratio(cr.running.last(ninety), fr.running.last(ninety)))
	t.row("StatefulSets becoming ready per second (from 10% to 90% of them)", pace(cr.stsReady, c.n), pace(fr.stsReady, c.n), "")
	t.row(fmt.Sprintf("All %d StatefulSets created", c.n), secs(cr.stsCreated.last(c.n)), secs(fr.stsCreated.last(c.n)), ratio(cr.stsCreated.last(c.n), fr.stsCreated.last(c.n)))
	t.row(fmt.Sprintf("All %d StatefulSets with every replica ready", c.n), secs(cr.stsReady.last(c.n)), secs(fr.stsReady.last(c.n)), ratio(cr.stsReady.last(c.n), fr.stsReady.last(c.n)))
	t.row(fmt.Sprintf("Last of the %d Database creates returned (the benchmark's own, unthrottled)", c.n), secs(cr.created), secs(fr.created), "")
	t.row("A claim bound by kube-controller-manager after it was made: median, 90th percentile and longest", claimWaits(cr.claimWaits), claimWaits(fr.claimWaits), "")
	w("%s\n", t.b.String())
	w("Every time is measured from the first Database create of that run, by the benchmark's own watches of Databases, StatefulSets and claims (the same code for both runs). ")
	w("A Database counts as Running when its `status.phase` is first seen as `Running`. ")
	w("A claim's wait is from when the watch first saw it to when it first saw it bound: kube-controller-manager's work, not the controller's nor the floor's; while it lasts, the pod waits for its claim, and past 30 s the controller says `VolumePending`.\n\n")

	w("## Targets\n\n")
	t = table{}
	t.header("target", "measured", "verdict")
	perDB := convWrites / n
	t.row(fmt.Sprintf("writes per new Database = the design's minimum, %d", designMinimumWrites),
		fmt.Sprintf("%s (%s without Events)", num(round2(perDB)), num(round2((convWrites-convEventWrites)/n))),
		verdictWrites(perDB, (convWrites-convEventWrites)/n))
	t.row(fmt.Sprintf("0 writes in the steady state (%s, %s)", cr.steadyDur(), resyncsIn(c)),
		fmt.Sprintf("%s (%s of them Events)", num(steadyWrites), num(steadyEventWrites)), verdict(steadyWrites == 0))
	within := func(a, b time.Duration) string {
		if a <= 0 || b <= 0 {
			return "not measured"
		}
		return verdict(a.Seconds()/b.Seconds() <= targetRatio)
	}
	t.row(fmt.Sprintf("all %d StatefulSets created within %g× the floor", c.n, targetRatio),
		ratio(cr.stsCreated.last(c.n), fr.stsCreated.last(c.n)), within(cr.stsCreated.last(c.n), fr.stsCreated.last(c.n)))
	t.row(fmt.Sprintf("all %d Databases Running within %g× the floor", c.n, targetRatio),
		ratio(cr.allRunning, fr.allRunning), within(cr.allRunning, fr.allRunning))
	budget := rssBudget(c.n)
	rssTarget := fmt.Sprintf("controller RSS at most %.0f MiB at %d Databases", budget/mib, c.n)
	if c.n > targetRSSBaseline {
		rssTarget += fmt.Sprintf(" (80 MiB at 1000, and 20 KiB for each of the %d more)", c.n-targetRSSBaseline)
	}
	rssVerdict := verdict(peakRSS <= budget)
	if c.n < targetRSSBaseline {
		rssVerdict = "not tested: fewer than 1000 Databases"
	}
	t.row(rssTarget, fmt.Sprintf("peak %.1f MiB", peakRSS/mib), rssVerdict)
	w("%s\n", t.b.String())
	if !cr.converged {
		w("**The controller did not bring all %d Databases to Running in the %s the run waited** (its limit: %s): %d were Running.\n\n", c.n, secs(cr.waited), c.timeout, len(cr.running))
	}

	w("### The minimum writes for a new Database: %d\n\n", designMinimumWrites)
	w("Under the default deletionPolicy Retain, the controller must hold a Database at its deletion (to release the credentials Secret to stay with the volumes), so its finalizer is added first: one patch. ")
	w("A Database owns six objects, and the API creates one object per request: with TLS (on by default) its certificate authority's Secret and its servers' certificate's, then the credentials Secret (with the authority in ca.crt), the headless Service, the client Service and the StatefulSet are six creates. ")
	w("Each is created complete, with its owner reference and labels, so none needs a second write. ")
	w("Its status must go from empty to Running at least once, and one server-side apply carries the whole final status (phase, replicas, version, endpoint, conditions): one write. ")
	w("Nothing else is needed for a Database to run and be reported Running; the pods, claims and volumes are written by kube-controller-manager, the scheduler and kwok, for the controller and the floor alike. ")
	w("Events and intermediate statuses (`Provisioning`) are the controller's choices for users to follow progress; they are counted in the measured figure and shown apart below.\n\n")

	w("## API requests the controller made\n\n")
	w("From its own `rest_client_requests_by_resource_total{verb,resource}` (verb is the HTTP method: a LIST and a WATCH are both GET). ")
	w("Start-up is from the process start to ready (caches synced), before any Database existed; convergence from the first Database create to all %d Running; ", c.n)
	w("trailing the %s after that, which catches writes already under way (an Event still queued in the broadcaster); the steady state the %s after that. ", c.settle, cr.steadyDur())
	w("Per Database is (convergence + trailing) ÷ %d.\n\n", c.n)
	t = table{}
	t.header("verb", "resource", "start-up", "convergence", "trailing", "per Database", "steady state")
	startupOf := func(r reqRow) float64 { return r.startup }
	for _, r := range rows {
		t.row(r.verb, r.resource, num(r.startup), num(r.converge), num(r.trailing), num(round2(newDB(r)/n)), num(r.steady))
	}
	t.row("**writes**", "all", num(sumWrites(rows, startupOf, nil)), "**"+num(convWrites-trailingWrites)+"**", num(trailingWrites),
		"**"+num(round2(perDB))+"**", "**"+num(steadyWrites)+"**")
	notEvent := func(r reqRow) bool { return !isEvent(r) }
	t.row("writes", "without Events", num(sumWrites(rows, startupOf, notEvent)),
		num(sumWrites(rows, func(r reqRow) float64 { return r.converge }, notEvent)),
		num(sumWrites(rows, func(r reqRow) float64 { return r.trailing }, notEvent)),
		num(round2((convWrites-convEventWrites)/n)), num(steadyWrites-steadyEventWrites))
	w("%s\n", t.b.String())

	codes := func(s *scrape) map[string]float64 { return s.byLabels("rest_client_requests_total", "method", "code") }
	cReady, cRunning, cSettled, cSteady := codes(cr.mReady), codes(cr.mRunning), codes(cr.mSettled), codes(cr.mSteady)
	var codeKeys []string
	for k := range cSteady {
		codeKeys = append(codeKeys, k)
	}
	sort.Strings(codeKeys)
	w("Responses by method and status code:\n\n")
	t = table{}
	t.header("method", "code", "start-up", "convergence", "trailing", "steady state")
	for _, k := range codeKeys {
		m, code, _ := strings.Cut(k, "\t")
		t.row(m, code, num(cReady[k]), num(cRunning[k]-cReady[k]), num(cSettled[k]-cRunning[k]), num(cSteady[k]-cSettled[k]))
	}
	w("%s\n", t.b.String())

	w("Status changes, as the benchmark's own watch of Databases saw them (a status write that changes nothing makes no new resourceVersion, and a watch shows every one that does), named by the phase and the Ready condition's reason before and after; a change that keeps both changed other fields (ready replicas, a message, another condition):\n\n")
	t = table{}
	t.header("from", "to", "controller", "per Database", "floor")
	floorChanges := map[transition]int{}
	var allChanges, allFloor int
	for _, tc := range fr.statusChanges {
		floorChanges[tc.transition] = tc.n
		allFloor += tc.n
	}
	for _, tc := range cr.statusChanges {
		t.row(tc.from, tc.to, num(float64(tc.n)), fmt.Sprintf("%.2f", float64(tc.n)/n), num(float64(floorChanges[tc.transition])))
		allChanges += tc.n
		delete(floorChanges, tc.transition)
	}
	for _, tc := range fr.statusChanges {
		if _, left := floorChanges[tc.transition]; left {
			t.row(tc.from, tc.to, "0", "0", num(float64(tc.n)))
		}
	}
	t.row("**all**", "", num(float64(allChanges)), fmt.Sprintf("%.2f", float64(allChanges)/n), num(float64(allFloor)))
	w("%s\n", t.b.String())

	syncs := func(s *scrape, res string) float64 {
		return s.sum("database_controller_reconcile_total", map[string]string{"result": res})
	}
	adds := func(s *scrape) float64 { return s.sum("workqueue_adds_total", map[string]string{"name": "databases"}) }
	retries := func(s *scrape) float64 {
		return s.sum("workqueue_retries_total", map[string]string{"name": "databases"})
	}
	w("## Reconciles\n\n")
	w("From `database_controller_reconcile_duration_seconds` (p50 and p99 interpolated inside the histogram's buckets, as `histogram_quantile` does) and the workqueue's counters. Its retries count every key it was given to add after a delay: a recheck, a retry after an error, and the update of a coming-up Database's child, which waits 250 ms for the others to make one pass (controller.go, followUpBatch).\n\n")
	hist := func(s *scrape) histogram { return s.histogram("database_controller_reconcile_duration_seconds", nil) }
	hConv := hist(cr.mRunning).minus(hist(cr.mReady))
	hSteady := hist(cr.mSteady).minus(hist(cr.mSettled))
	t = table{}
	t.header("window", "syncs", "per Database", "skipped", "errors", "queue adds", "retries", "p50", "p99")
	all := func(s *scrape) float64 { return syncs(s, "success") + syncs(s, "skipped") + syncs(s, "error") }
	convSyncs := all(cr.mRunning) - all(cr.mReady)
	steadySyncs := all(cr.mSteady) - all(cr.mSettled)
	t.row("convergence", num(convSyncs), num(round2(convSyncs/n)), num(syncs(cr.mRunning, "skipped")-syncs(cr.mReady, "skipped")),
		num(syncs(cr.mRunning, "error")-syncs(cr.mReady, "error")),
		num(adds(cr.mRunning)-adds(cr.mReady)), num(retries(cr.mRunning)-retries(cr.mReady)), ms(hConv.quantile(0.5)), ms(hConv.quantile(0.99)))
	t.row("steady state", num(steadySyncs), num(round2(steadySyncs/n)), num(syncs(cr.mSteady, "skipped")-syncs(cr.mSettled, "skipped")),
		num(syncs(cr.mSteady, "error")-syncs(cr.mSettled, "error")),
		num(adds(cr.mSteady)-adds(cr.mSettled)), num(retries(cr.mSteady)-retries(cr.mSettled)), ms(hSteady.quantile(0.5)), ms(hSteady.quantile(0.99)))
	w("%s\n", t.b.String())
	queuedTable(w, cr, n)
	w("A skipped sync is one of a settled Database of which nothing it reads has a new resourceVersion: no pass runs (pkg/reconcile/settled.go). ")
	steadyCPU := cr.mSteady.sum("process_cpu_seconds_total", nil) - cr.mSettled.sum("process_cpu_seconds_total", nil)
	if steadySyncs > 0 {
		w("In the steady state, the controller used **%.2f CPU seconds for %s syncs: %.2f s per 1,000** (its `process_cpu_seconds_total`; the syncs are resyncs, as nothing changed).\n\n",
			steadyCPU, num(steadySyncs), steadyCPU/steadySyncs*1000)
	} else {
		w("\n\n")
	}

	w("## Events\n\n")
	w("The events the controller recorded (its event broadcaster logs each one it is given) against those that reached the API (a LIST of the namespace's events at the end; an event repeated for the same object is stored once, with a count).\n\n")
	t = table{}
	t.header("reason", "recorded", "per Database", "stored in the API", "with their counts")
	reasons := map[string]bool{}
	for k := range cr.eventsLogged {
		reasons[k] = true
	}
	for k := range cr.eventsStored {
		reasons[k] = true
	}
	var reasonList []string
	for k := range reasons {
		reasonList = append(reasonList, k)
	}
	sort.Strings(reasonList)
	var logged, stored, storedSum int
	for _, k := range reasonList {
		t.row(k, fmt.Sprint(cr.eventsLogged[k]), num(round2(float64(cr.eventsLogged[k])/n)), fmt.Sprint(cr.eventsStored[k]), fmt.Sprint(cr.eventsStoredSum[k]))
		logged += cr.eventsLogged[k]
		stored += cr.eventsStored[k]
		storedSum += cr.eventsStoredSum[k]
	}
	t.row("**all**", fmt.Sprint(logged), num(round2(float64(logged)/n)), fmt.Sprint(stored), fmt.Sprint(storedSum))
	w("%s\n", t.b.String())
	if storedSum < logged {
		w("**%d of the %d events the controller recorded (%.0f%%) never reached the API.** ", logged-storedSum, logged, 100*float64(logged-storedSum)/float64(logged))
		w("client-go's event broadcaster hands events to the API writer through a queue of 1000 and drops what does not fit, without a log line, when the writer falls behind; here the writer shares the controller's rate limiter with the creates.\n\n")
	}

	w("## What the floor wrote\n\n")
	w("The floor is a small program (hack/bench/floor.go) that does, for each Database, only what reaching the same state needs, with the controller's own builders: ")
	w("the six creates the controller makes (the two TLS Secrets, with certificates issued as the controller issues them, the credentials Secret, headless Service, client Service, StatefulSet, the same objects, planned by `pkg/plan` as the controller plans them), ")
	w("then, when a WATCH of StatefulSets shows that Database's StatefulSet rolled out with every replica ready, one server-side apply of the status `status.Compute` gives, which is the same `Running` status the controller writes (field manager `%s`). ", floorFieldManager)
	w("No informers, no Events, no intermediate status, no reads before writing: it takes each Database from the create that made it. ")
	w("It runs %d goroutines (the controller's --workers) over two clientsets with QPS %g and burst %d each, as the controller has (one for Kubernetes objects, one for Databases). ", c.workers, c.qps, c.burst)
	w("Its time is the same watch-based clock as the controller's: when the tracker sees the %d-th Database Running after the floor's status writes.\n\n", c.n)
	w("Requests counted at the floor's HTTP client:\n\n")
	t = table{}
	t.header("verb", "resource", "total", "per Database")
	for _, r := range floorRows {
		t.row(r.verb, r.resource, num(r.n), num(round2(r.n/n)))
	}
	t.row("**writes**", "all", "**"+num(floorWrites)+"**", "**"+num(round2(floorWrites/n))+"**")
	w("%s\n", t.b.String())
	if fr.result.failures > 0 {
		w("The floor retried %d failed writes.\n\n", fr.result.failures)
	}

	w("## Workqueue depth, memory and cache\n\n")
	w("Sampled from the controller's /metrics every %s (%d samples).\n\n", c.sampleEvery, len(cr.samples))
	t = table{}
	t.header("", "value")
	t.row("workqueue depth, maximum", fmt.Sprintf("%s at %s", num(maxDepth), secs(maxDepthAt)))
	t.row("peak RSS (VmHWM of the process)", fmt.Sprintf("**%.1f MiB**", peakRSS/mib))
	t.row("peak RSS sampled (process_resident_memory_bytes)", fmt.Sprintf("%.1f MiB", maxRSS/mib))
	t.row("RSS at the end of the steady state", fmt.Sprintf("%.1f MiB", last.rss/mib))
	if cr.endRSSAnon > 0 {
		t.row("of which anonymous (heap, stacks) / file (the binary's pages it touched, dropped first when memory is short)",
			fmt.Sprintf("%.1f MiB / %.1f MiB", cr.endRSSAnon/mib, cr.endRSSFile/mib))
	}
	t.row("peak Go heap allocated (go_memstats_heap_alloc_bytes)", fmt.Sprintf("**%.1f MiB**", maxHeap/mib))
	t.row("peak Go heap in use (go_memstats_heap_inuse_bytes)", fmt.Sprintf("%.1f MiB", maxInuse/mib))
	t.row("Go heap allocated at the end of the steady state", fmt.Sprintf("%.1f MiB", last.heapAlloc/mib))
	t.row("goroutines at the end", num(last.goroutines))
	label, counts, cached := cachedObjects(cr, c.n)
	var kinds []string
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", int(counts[k]), k))
	}
	t.row(label, fmt.Sprintf("**%d** (%s)", int(cached), strings.Join(parts, ", ")))
	t.row("peak RSS per cached object", fmt.Sprintf("%.1f KiB", peakRSS/1024/cached))
	t.row("peak RSS per Database", fmt.Sprintf("%.1f KiB", peakRSS/1024/n))
	t.row("controller CPU, convergence", fmt.Sprintf("%.1f s", cr.cpu["controller"]))
	if len(cr.samples) > 0 {
		t.row("controller CPU, whole run", fmt.Sprintf("%.1f s", last.cpuSeconds))
	}
	w("%s\n", t.b.String())
	w("Over time (t from the first Database create; Running is the controller's own `database_controller_databases{phase=\"Running\"}`):\n\n")
	t = table{}
	t.header("t", "workqueue depth", "Running", "RSS MiB", "heap MiB", "writes so far", "syncs so far")
	step := 10 * time.Second
	if cr.steadyEnd > 40*step {
		step = (cr.steadyEnd/40 + time.Second - 1).Truncate(time.Second)
	}
	var base sample
	if len(cr.samples) > 0 {
		base = cr.samples[0]
	}
	nextT := time.Duration(0)
	for i, s := range cr.samples {
		at := s.at.Sub(cr.t0)
		if at < nextT && i != len(cr.samples)-1 {
			continue
		}
		t.row(secs(at), num(s.depth), num(s.running), fmt.Sprintf("%.1f", s.rss/mib), fmt.Sprintf("%.1f", s.heapAlloc/mib),
			num(s.writes-base.writes), num(s.reconciles-base.reconciles))
		for nextT <= at {
			nextT += step
		}
	}
	w("%s\n", t.b.String())
	if cr.halfHeapTop != "" {
		w("What the Go heap held when half of the Databases were Running, after a GC (`go tool pprof -top -sample_index=inuse_space -nodecount=20 controller %s`):\n\n", cr.halfHeapProfile)
		w("```\n%s\n```\n\n", cr.halfHeapTop)
	}
	if cr.heapTop != "" {
		w("What the Go heap holds at the end of the steady state, after a GC: the in-use bytes by the function that allocated them (`go tool pprof -top -sample_index=inuse_space -nodecount=20 controller %s`; the profile is from the controller's `--profiling`):\n\n", cr.heapProfile)
		w("```\n%s\n```\n\n", cr.heapTop)
	}

	if cr.cpuTop != "" {
		w("Where the controller's CPU went in convergence, from a %s CPU profile taken 5 s after its first create (`go tool pprof -top -cum -nodecount=30 controller %s`; the profile is from its `--profiling`):\n\n", fmtDur(c.controllerProfile), cr.cpuProfile)
		w("```\n%s\n```\n\n", cr.cpuTop)
	}

	w("## CPU of each process\n\n")
	w("CPU seconds used from the first Database create to all Running, and the average number of cores that is (this machine has %d). ", env.cpus)
	w("In the floor run, the floor's own work is in the bench process. ")
	w("Other processes on this machine are whatever else ran at the time (the machine's busy time from /proc/stat less the processes above). ")
	w("The 1-minute load average was %s in the floor run and %s in the controller run.\n\n", loadSummary(fr.load), loadSummary(cr.load))
	names := map[string]bool{}
	for k := range fr.cpu {
		names[k] = true
	}
	for k := range cr.cpu {
		names[k] = true
	}
	var procs []string
	for k := range names {
		procs = append(procs, k)
	}
	sort.Strings(procs)
	t = table{}
	t.header("process", "floor run", "controller run")
	var fTotal, cTotal float64
	for _, p := range procs {
		fv, fok := fr.cpu[p]
		cv, cok := cr.cpu[p]
		t.row(p, cpuCell(fv, fok, fr.allRunning), cpuCell(cv, cok, cr.allRunning))
		fTotal += fv
		cTotal += cv
	}
	t.row("other processes on this machine", otherCell(fr.machineCPU-fTotal, fr.machineCPU, fr.allRunning), otherCell(cr.machineCPU-cTotal, cr.machineCPU, cr.allRunning))
	t.row("**the whole machine**", cpuCell(fr.machineCPU, true, fr.allRunning), cpuCell(cr.machineCPU, true, cr.allRunning))
	w("%s\n", t.b.String())

	writeControlPlane(w, &fr.phase, &cr.phase)

	w("## Chart\n\n")
	w("![Databases Running over time, controller against floor; the controller's memory and workqueue depth](%s)\n\n", chart)

	w("## Set-up\n\n")
	limits := "with their default client QPS (20 and burst 30 for kube-controller-manager, 50 and 100 for kube-scheduler)"
	if c.controlPlaneLimits != "" {
		limits = "with client limits " + c.controlPlaneLimits
	}
	w("- `hack/bench.sh` starts a control plane of its own with `hack/local-up.sh` (etcd, kube-apiserver, kube-controller-manager, kube-scheduler %s, and kwok with %d fake nodes of 110 pods, whose client has no rate limit at all (kwok v0.8.0 sets client-go's `NewFakeAlwaysRateLimiter` in pkg/utils/client/clientset.go) and which plays up to 4 pod stages at once, its default; Service range %s, pod range %s), installs the CRDs, and runs `hack/bench` against it; it stops the control plane when done.\n",
		limits, c.nodes, orUnknown(c.serviceCIDR), orUnknown(c.podCIDR))
	w("- %d Databases, named `db-00000`…, the engines in turn (PostgreSQL 18, MySQL 8.4, MongoDB 8.0), one replica each, everything else defaulted; created by %d goroutines of the benchmark with an unthrottled client, the same way in both runs.\n", c.n, c.creators)
	if c.volumes == "static" {
		w("- Volumes: before each run, outside its clock, one PersistentVolume per Database of the StorageClass `%s` (no provisioner), bound in advance to the claim its StatefulSet makes (`spec.claimRef`), so that kube-controller-manager binds the claims. kwok's own provisioning plays the steps of every claim one at a time, about 2.7 claims a second here, and would set the pace instead (`hack/bench/volumes.go`). The Databases name that StorageClass in `spec.storage.storageClassName`.\n", staticClass)
	} else {
		w("- Volumes: the claims are of the default StorageClass, provisioned by kwok's stages, which play the steps of every claim one at a time.\n")
	}
	if c.warmup > 0 {
		w("- Before each run, %d Databases are brought to Running through the floor's code in a namespace of their own (`bench-warmup-floor`, `bench-warmup-controller`), unmeasured, so that neither run pays for a cold API server, controller manager, scheduler or kwok.\n", c.warmup)
	}
	if c.restart != "" {
		w("- The floor runs first, in namespace `%s`; then the control plane is stopped and a fresh one started in the same way (hack/bench.sh's BENCH_FRESH_CONTROL_PLANE=1: hack/local-down.sh, hack/local-up.sh, the CRDs), and the controller runs on it, in namespace `%s`: neither run carries what the other left (objects, pods, volumes, the work queues of kube-controller-manager, the scheduler and kwok).\n", fr.ns, cr.ns)
	} else {
		w("- The floor runs first, in namespace `%s`; then the controller, in namespace `%s`, on the same control plane, so anything the first run leaves on it (%d Databases, their pods and volumes) weighs on the controller's run, not the floor's.\n", fr.ns, cr.ns, c.n)
	}
	args := make([]string, len(cr.args))
	for i, a := range cr.args {
		if k, v, ok := strings.Cut(a, "="); ok {
			a = k + "=" + relPath(v)
		}
		args[i] = a
	}
	envPrefix := ""
	if len(c.controllerEnv) > 0 {
		envPrefix = strings.Join(c.controllerEnv, " ") + " "
	}
	w("- The controller is the `%s` binary, run out of cluster with the admin kubeconfig: `%scontroller %s`.\n", relPath(c.controllerBin), envPrefix, strings.Join(args, " "))
	if slices.Contains(c.controllerArgs, "--server-access=direct") {
		w("- `--server-access=direct` is what the controller does when installed in a cluster (artifacts/deploy), where `auto` means direct: the production install is what is measured. Run out of cluster with `auto`, it would reach each fake pod through a tunnel of the API server instead.\n")
	}
	w("- The controller resyncs at %s. The steady state is held for %s after the last Database is Running (and the trailing writes): %s.\n", c.resyncWords(), c.hold, resyncsIn(c))
	w("- The controller's log is in `%s`.\n", relPath(cr.logPath))
	return b.String()
}

// resyncsIn says how many resyncs of every Database the steady state holds.
func resyncsIn(c config) string {
	switch k := c.steadyResyncs(); k {
	case 0:
		return "no resync falls in it (BENCH_RESYNC=30s measures what resyncs cost)"
	case 1:
		return "every Database is resynced once in it"
	default:
		return fmt.Sprintf("every Database is resynced %d times in it", k)
	}
}

func (cr *controllerRun) steadyDur() string {
	return fmt.Sprintf("%.0f s", (cr.steadyEnd - cr.steadyStart).Seconds())
}

func verdictWrites(perDB, withoutEvents float64) string {
	switch {
	case math.Abs(perDB-designMinimumWrites) < 0.005:
		return "met"
	case math.Abs(withoutEvents-designMinimumWrites) < 0.005:
		return fmt.Sprintf("**missed** by %s per Database (Events); met without them", num(round2(perDB-designMinimumWrites)))
	default:
		return fmt.Sprintf("**missed** by %s per Database", num(round2(perDB-designMinimumWrites)))
	}
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func cpuCell(v float64, ok bool, wall time.Duration) string {
	if !ok {
		return "–"
	}
	if wall <= 0 {
		return fmt.Sprintf("%.1f s", v)
	}
	return fmt.Sprintf("%.1f s (%.2f cores)", v, v/wall.Seconds())
}

func loadSummary(load []float64) string {
	if len(load) == 0 {
		return "not sampled"
	}
	lo, hi, sum := math.Inf(1), 0.0, 0.0
	for _, l := range load {
		lo = math.Min(lo, l)
		hi = math.Max(hi, l)
		sum += l
	}
	return fmt.Sprintf("%.1f on average (%.1f to %.1f)", sum/float64(len(load)), lo, hi)
}

// otherCell is the machine's CPU time not accounted to the processes above;
// per-process and whole-machine accounting differ by a few percent, so a
// small negative difference is shown as about zero.
func otherCell(v, machine float64, wall time.Duration) string {
	if v < 0.05*machine {
		return "≈ 0"
	}
	return cpuCell(v, true, wall)
}

// relPath shows a path under the working directory (the repository root,
// where hack/bench.sh runs) relative to it.
func relPath(p string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

// claimWaits is the median, 90th percentile and longest of waits, sorted.
func claimWaits(waits []time.Duration) string {
	if len(waits) == 0 {
		return "–"
	}
	at := func(q float64) time.Duration { return waits[int(q*float64(len(waits)-1))] }
	return fmt.Sprintf("%s / %s / %s", secs(at(0.5)), secs(at(0.9)), secs(waits[len(waits)-1]))
}

// pace is how many per second the curve rose from 10% to 90% of n.
func pace(c curve, n int) string {
	lo, hi := c.last((n+9)/10), c.last((n*9+9)/10)
	if lo < 0 || hi <= lo {
		return "–"
	}
	return fmt.Sprintf("%.2f", float64((n*9+9)/10-(n+9)/10)/(hi-lo).Seconds())
}

// queuedTable writes why the controller put Databases on its queue, from
// its database_controller_queued_total{by,change}, in convergence and in
// the steady state; nothing for a controller that does not export it.
func queuedTable(w func(string, ...any), cr *controllerRun, n float64) {
	const name = "database_controller_queued_total"
	ready, running := cr.mReady.byLabels(name, "by", "change"), cr.mRunning.byLabels(name, "by", "change")
	settled, steady := cr.mSettled.byLabels(name, "by", "change"), cr.mSteady.byLabels(name, "by", "change")
	if len(running) == 0 && len(steady) == 0 {
		return
	}
	keys := make([]string, 0, len(steady))
	for k := range steady {
		keys = append(keys, k)
	}
	for k := range running {
		if _, ok := steady[k]; !ok {
			keys = append(keys, k)
		}
	}
	conv := func(k string) float64 { return running[k] - ready[k] }
	sort.Slice(keys, func(i, j int) bool {
		if a, b := conv(keys[i]), conv(keys[j]); a != b {
			return a > b
		}
		return keys[i] < keys[j]
	})
	w("Why the Databases were put on the queue (`database_controller_queued_total`: the kind of object whose change queued a Database, or a timer of the controller's own, counted when set; a Database already queued is queued once, so these are more than the syncs):\n\n")
	t := table{}
	t.header("by", "change", "convergence", "per Database", "steady state")
	var allConv, allSteady float64
	for _, k := range keys {
		by, change, _ := strings.Cut(k, "\t")
		c, st := conv(k), steady[k]-settled[k]
		if c == 0 && st == 0 {
			continue
		}
		allConv, allSteady = allConv+c, allSteady+st
		t.row(by, change, num(c), fmt.Sprintf("%.2f", c/n), num(st))
	}
	t.row("**all**", "", num(allConv), fmt.Sprintf("%.2f", allConv/n), num(allSteady))
	w("%s\n", t.b.String())
}

// cachedObjects is what the controller's informer caches held at the end
// of the steady state, by kind, and in all: its own
// database_controller_cached_objects{kind} (the product and the
// comparison operator export it), or, from a controller that does not,
// the objects the controller labelled in the namespace and the Databases,
// which label says.
func cachedObjects(cr *controllerRun, databases int) (label string, byKind map[string]float64, all float64) {
	byKind = map[string]float64{}
	for k, v := range cr.mSteady.byLabels("database_controller_cached_objects", "kind") {
		if v > 0 {
			byKind[k] = v
		}
	}
	label = "objects in the controller's informer caches (its database_controller_cached_objects, at the end)"
	if len(byKind) == 0 {
		label = "objects it labelled in the namespace, and the Databases (the controller exports no database_controller_cached_objects)"
		for k, v := range cr.children {
			byKind[k] = float64(v)
		}
		byKind["Databases"] = float64(databases)
	}
	for _, v := range byKind {
		all += v
	}
	return label, byKind, all
}

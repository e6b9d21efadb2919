// Command bench measures database-controller at scale on a running control
// plane: how long N new Databases take to become Running, the API requests
// the controller makes for them and in the steady state after, its
// reconcile latency, workqueue depth and memory; and, on the same control
// plane, the floor: the least API work that reaches the same state. It
// writes a markdown report and a PNG chart. hack/bench.sh starts the
// control plane and runs it; see there.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
	clientset "github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned"
	"github.com/dbcontroller/database-controller/pkg/names"
)

type config struct {
	kubeconfig    string
	controllerBin string
	binDir        string
	localDir      string
	// kcmPort is kube-controller-manager's secure port, for its /metrics.
	kcmPort       int
	report        string
	workDir       string
	command       string
	n             int
	workers       int
	qps           float64
	burst         int
	resync        time.Duration
	hold          time.Duration
	timeout       time.Duration
	creators      int
	nodes         int
	serviceCIDR   string
	controllerEnv []string
	// controllerArgs are flags given to the controller after the
	// benchmark's own.
	controllerArgs []string
	podCIDR        string
	// controlPlaneLimits describes the client QPS and burst given to
	// kube-controller-manager and kube-scheduler; "" for their defaults.
	controlPlaneLimits string
	// apiserverProfile is the length of a CPU profile of kube-apiserver
	// taken in each run, none when 0.
	apiserverProfile time.Duration
	// controllerProfile is the length of a CPU profile of the controller
	// in its run, from 5 s after its first create; none when 0.
	controllerProfile time.Duration
	// volumes is "static" (volumes made in advance, see volumes.go) or
	// "kwok" (claims of the default class, provisioned by kwok).
	volumes string
	// restart is a shell command that gives the controller's run a fresh
	// control plane of its own; "" to run it on the floor's.
	restart     string
	sampleEvery time.Duration
	warmup      int
	settle      time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig of the control plane (admin)")
	flag.StringVar(&c.controllerBin, "controller", "./controller", "the controller binary")
	flag.StringVar(&c.binDir, "bin-dir", "_output/bin", "the control plane's binaries, for their versions")
	flag.StringVar(&c.localDir, "local-dir", "", "the control plane's LOCAL_DIR, for the CPU time of its components")
	flag.IntVar(&c.kcmPort, "kcm-port", 0, "kube-controller-manager's secure port, for its volume binding queues' metrics (0: not read)")
	flag.StringVar(&c.report, "report", "_output/bench/report.md", "markdown report to write; the chart is written beside it with the extension .png")
	flag.StringVar(&c.workDir, "work-dir", "_output/bench", "directory for the controller's log")
	flag.StringVar(&c.command, "command", "", "the command line to print in the report")
	flag.IntVar(&c.n, "n", 1000, "number of Databases")
	flag.IntVar(&c.workers, "workers", 8, "controller --workers (its default), and the floor's goroutines")
	flag.Float64Var(&c.qps, "qps", 50, "controller --kube-api-qps, and the floor's QPS")
	flag.IntVar(&c.burst, "burst", 100, "controller --kube-api-burst, and the floor's burst")
	flag.DurationVar(&c.resync, "resync", 0, "controller --resync-period; 0: the flag is not given, and the controller resyncs as installed (this project's: 10 min)")
	flag.DurationVar(&c.hold, "hold", time.Minute, "how long the steady state is held after all are Running (and the trailing writes are counted)")
	flag.DurationVar(&c.timeout, "timeout", 30*time.Minute, "how long each phase may take to reach all Running")
	flag.IntVar(&c.creators, "creators", 8, "goroutines creating the Databases (an unthrottled client, the same in both phases)")
	flag.IntVar(&c.nodes, "nodes", 0, "number of fake nodes (for the report)")
	flag.StringVar(&c.serviceCIDR, "service-cidr", "", "the control plane's Service range (for the report)")
	flag.StringVar(&c.podCIDR, "pod-cidr", "", "the fake pods' IP range (for the report)")
	flag.DurationVar(&c.controllerProfile, "controller-profile", 0, "if set, a CPU profile of the controller this long is taken in its run, from 5 s after its first create, through its --profiling, into the work directory; the report shows where its CPU went")
	flag.DurationVar(&c.apiserverProfile, "apiserver-profile", 0, "if set, a CPU profile of kube-apiserver this long is taken in each run, from 5 s after its first create, into the work directory (for a diagnosis; it costs the API server some CPU)")
	flag.StringVar(&c.controlPlaneLimits, "control-plane-limits", "", "the client QPS and burst of kube-controller-manager and kube-scheduler, when not their defaults (for the report)")
	flag.StringVar(&c.volumes, "volumes", "static", "static: volumes made in advance, bound by kube-controller-manager; kwok: claims provisioned by kwok's stages, one step at a time")
	flag.StringVar(&c.restart, "restart", "", "shell command that stops the control plane and starts a fresh one, with the CRDs installed, before the controller's run")
	flag.DurationVar(&c.sampleEvery, "sample-every", 0, "how often the controller's /metrics is sampled; 0: every N/1000 seconds, at least every second (see sampleInterval)")
	flag.IntVar(&c.warmup, "warmup", 20, "Databases the floor brings to Running first, unmeasured, so that neither run meets a cold API server")
	flag.DurationVar(&c.settle, "settle", 5*time.Second, "after all are Running, how long trailing writes are counted apart before the steady state begins")
	flag.Func("controller-env", "VAR=value to set in the controller's environment (repeatable), such as GOMEMLIMIT=80MiB", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("want VAR=value, got %q", v)
		}
		c.controllerEnv = append(c.controllerEnv, v)
		return nil
	})
	flag.Func("controller-arg", "a flag given to the controller after the benchmark's own (repeatable), such as --server-access=direct", func(v string) error {
		if !strings.HasPrefix(v, "--") {
			return fmt.Errorf("want --flag, got %q", v)
		}
		c.controllerArgs = append(c.controllerArgs, v)
		return nil
	})
	flag.Parse()
	if c.volumes != "static" && c.volumes != "kwok" {
		fmt.Fprintln(os.Stderr, "bench: -volumes must be static or kwok")
		os.Exit(2)
	}
	if c.n < 1 || c.workers < 1 || c.qps <= 0 || c.burst < 1 || c.creators < 1 || c.resync < 0 || c.hold <= 0 || c.sampleEvery < 0 {
		fmt.Fprintln(os.Stderr, "bench: -n, -workers, -qps, -burst, -creators and -hold must be positive, -resync and -sample-every not negative")
		os.Exit(2)
	}
	if c.sampleEvery == 0 {
		c.sampleEvery = sampleInterval(c.n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		logf("FAILED: %v", err)
		os.Exit(1)
	}
}

// storageClass is the StorageClass of the Databases: "" for the default.
func (c config) storageClass() string {
	if c.volumes == "static" {
		return staticClass
	}
	return ""
}

// prepareVolumes makes the n volumes of namespace ns in advance, when the
// volumes are static.
func prepareVolumes(ctx context.Context, c config, kube kubernetes.Interface, ns string, n int) error {
	if c.volumes != "static" {
		return nil
	}
	start := time.Now()
	if err := createStaticVolumes(ctx, kube, ns, n, c.creators); err != nil {
		return err
	}
	logf("%s: %d volumes made in advance in %s", ns, n, fmtDur(time.Since(start)))
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// phase is what both runs, the floor's and the controller's, are measured by.
type phase struct {
	name string
	ns   string
	// t0 is when the first Database create was sent; every time is from t0.
	t0 time.Time
	// created is when the last Database create returned.
	created time.Duration
	// allRunning is when the tracker saw the N-th Database Running, -1 if never.
	allRunning                    time.Duration
	running, stsCreated, stsReady curve
	// claimWaits are how long each claim waited to be bound, after the
	// tracker first saw it, shortest first.
	claimWaits []time.Duration
	// statusChanges are the changes of Database status the tracker saw,
	// from the first create to the end of the run.
	statusChanges []transitionCount
	// cpu is the CPU seconds each component used from t0 to all Running,
	// and machineCPU what every process on the machine used.
	cpu        map[string]float64
	machineCPU float64
	// load is the machine's 1-minute load average, sampled every second.
	load []float64
	// controlPlane is what the run gave the rest of the control plane to
	// do, and how its volume binding kept up.
	controlPlane controlPlane
}

type floorRun struct {
	phase
	result  floorResult
	counter *requestCounter
}

type controllerRun struct {
	phase
	version string
	args    []string
	logPath string
	// Scrapes: when ready (before any Database), at all Running, once the
	// trailing writes are counted (settle later), at the end of the steady
	// state.
	mReady, mRunning, mSettled, mSteady *scrape
	steadyStart, steadyEnd              time.Duration
	samples                             []sample
	peakRSS                             float64
	// endRSSAnon and endRSSFile split the RSS at the end (RssAnon,
	// RssFile): 0 when not read.
	endRSSAnon, endRSSFile float64
	children               map[string]int
	converged              bool
	// waited is how long the run waited for all Running, when it did not
	// see them all: it ran out of time or was stopped.
	waited time.Duration
	// Events by reason: emitted (the controller logs every event it
	// records) and stored in the API (objects, and their count fields).
	eventsLogged, eventsStored, eventsStoredSum map[string]int
	// heapProfile is the controller's heap profile at the end of the
	// steady state, after a GC; heapTop what `go tool pprof -top` makes of
	// its in-use bytes.
	heapProfile, heapTop string
	// halfHeapProfile and halfHeapTop are the same, taken when half of
	// the Databases are Running: in the thick of convergence, nearer the
	// peak than the end is.
	halfHeapProfile, halfHeapTop string
	// cpuProfile is the controller's CPU profile in convergence, when
	// asked; cpuTop what `go tool pprof -top` makes of it.
	cpuProfile, cpuTop string
}

type environment struct {
	date, host, cpuModel, kernel                string
	cpus                                        int
	memTotal                                    float64
	goVersion, clientGo                         string
	apiserver, kwok, controllerVersion, etcdVer string
}

// clients are the benchmark's own clients of one control plane: the admin
// configuration, and unthrottled clientsets built from it.
type clients struct {
	cfg     *rest.Config
	obsKube kubernetes.Interface
	obsDB   clientset.Interface
}

func newClients(kubeconfig string) (clients, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return clients{}, err
	}
	// The benchmark's own clients (creating Databases, watching, listing)
	// are not rate limited, so that they never hold either side back.
	observer := rest.CopyConfig(cfg)
	observer.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	observer.UserAgent = "database-controller-bench"
	obsKube, err := kubernetes.NewForConfig(observer)
	if err != nil {
		return clients{}, err
	}
	obsDB, err := clientset.NewForConfig(observer)
	if err != nil {
		return clients{}, err
	}
	return clients{cfg: cfg, obsKube: obsKube, obsDB: obsDB}, nil
}

// prepare readies the control plane for one run: with --restart, a fresh
// one; the namespace of the run and the warm-up's, the static volumes'
// StorageClass, and the warm-up.
func prepare(ctx context.Context, c config, ns string, restart bool) (clients, error) {
	if restart && c.restart != "" {
		logf("starting a fresh control plane: %s", c.restart)
		cmd := exec.CommandContext(ctx, "bash", "-c", c.restart)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return clients{}, fmt.Errorf("restarting the control plane: %w", err)
		}
	}
	cl, err := newClients(c.kubeconfig)
	if err != nil {
		return cl, err
	}
	warmNS := "bench-warmup-" + strings.TrimPrefix(ns, "bench-")
	for _, n := range []string{warmNS, ns} {
		if err := createNamespace(ctx, cl.obsKube, n); err != nil {
			return cl, err
		}
	}
	if c.volumes == "static" {
		if err := createStaticClass(ctx, cl.obsKube); err != nil {
			return cl, err
		}
	}
	if c.warmup > 0 {
		// The first requests for a resource on a fresh API server pay for
		// its caches and compiled validation, and kube-controller-manager,
		// the scheduler and kwok start their work queues: paid here, by
		// neither run.
		wc := c
		wc.n = c.warmup
		wc.apiserverProfile = 0
		logf("warm-up: %d Databases through the floor in namespace %s", wc.n, warmNS)
		wr, err := runFloor(ctx, wc, cl.cfg, cl.obsKube, cl.obsDB, warmNS)
		if err != nil {
			return cl, fmt.Errorf("warm-up: %w", err)
		}
		logf("warm-up: all %d Running after %s", wc.n, fmtDur(wr.allRunning))
	}
	return cl, nil
}

func run(ctx context.Context, c config) error {
	if err := os.MkdirAll(c.workDir, 0o755); err != nil {
		return err
	}
	floorNS, ctrlNS := "bench-floor", "bench-controller"
	cl, err := prepare(ctx, c, floorNS, false)
	if err != nil {
		return err
	}
	env := readEnvironment(ctx, c, cl.obsKube)

	// The floor first. Without --restart, anything it leaves on the
	// control plane (its objects, its pods) weighs on the controller's run.
	logf("floor: %d Databases in namespace %s, %d goroutines, QPS %g, burst %d", c.n, floorNS, c.workers, c.qps, c.burst)
	fr, err := runFloor(ctx, c, cl.cfg, cl.obsKube, cl.obsDB, floorNS)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	logf("floor: all %d Running after %s", c.n, fmtDur(fr.allRunning))

	if cl, err = prepare(ctx, c, ctrlNS, true); err != nil {
		return err
	}
	logf("controller: %d Databases in namespace %s, --workers=%d --kube-api-qps=%g --kube-api-burst=%d, resync %s",
		c.n, ctrlNS, c.workers, c.qps, c.burst, c.resyncWords())
	cr, err := runController(ctx, c, cl.cfg, cl.obsKube, cl.obsDB, ctrlNS)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	env.controllerVersion = cr.version

	if err := os.MkdirAll(filepath.Dir(c.report), 0o755); err != nil {
		return err
	}
	chartPath := strings.TrimSuffix(c.report, filepath.Ext(c.report)) + ".png"
	if err := writeChart(chartPath, c, fr, cr); err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	md := renderReport(c, env, fr, cr, filepath.Base(chartPath))
	if err := os.WriteFile(c.report, []byte(md), 0o644); err != nil {
		return err
	}
	logf("report: %s, chart: %s", c.report, chartPath)
	return nil
}

func createNamespace(ctx context.Context, kube kubernetes.Interface, ns string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s already exists: the benchmark needs a fresh control plane (hack/bench.sh starts one)", ns)
	}
	if err != nil {
		return err
	}
	// Pods are refused until the namespace's default ServiceAccount exists.
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no ServiceAccount default in %s after a minute", ns)
		}
		sleep(ctx, 200*time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// newDatabase is the i-th Database: the engines in turn, each at the
// newest version of its catalog, one replica of 1Gi, everything else
// defaulted.
func newDatabase(i int, storageClass string) *dbv1alpha1.Database {
	engines := []dbv1alpha1.Engine{dbv1alpha1.EnginePostgreSQL, dbv1alpha1.EngineMySQL, dbv1alpha1.EngineMongoDB}
	e := engines[i%len(engines)]
	p, err := registry.Lookup(string(e))
	if err != nil {
		panic(err)
	}
	versions := p.Versions()
	return &dbv1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("db-%05d", i)},
		Spec: dbv1alpha1.DatabaseSpec{
			Engine:  e,
			Version: versions[len(versions)-1],
			// The schema's default, spelled out: a zero Quantity would be
			// sent as "0", which the schema refuses.
			Storage: dbv1alpha1.StorageSpec{Size: volumeSize, StorageClassName: storageClassOrNil(storageClass)},
		},
	}
}

// storageClassOrNil is nil for "": the cluster's default class.
func storageClassOrNil(class string) *string {
	if class == "" {
		return nil
	}
	return &class
}

// createDatabases creates n Databases with conc goroutines and hands each
// created object to each. It returns when all are created.
func createDatabases(ctx context.Context, c clientset.Interface, ns string, n, conc int, storageClass string, each func(*dbv1alpha1.Database)) error {
	return inParallel(ctx, n, conc, func(i int) error {
		db := newDatabase(i, storageClass)
		for attempt := 0; ; attempt++ {
			created, err := c.DbcontrollerV1alpha1().Databases(ns).Create(ctx, db, metav1.CreateOptions{})
			if err == nil {
				each(created)
				return nil
			}
			if ctx.Err() != nil || attempt >= 20 {
				return fmt.Errorf("creating Database %s: %w", db.Name, err)
			}
			sleep(ctx, 200*time.Millisecond)
		}
	})
}

// inParallel runs do(0) … do(n-1) on conc goroutines, and returns the
// first error, after which no new i is started.
func inParallel(ctx context.Context, n, conc int, do func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				mu.Lock()
				failed := firstErr != nil
				mu.Unlock()
				if i >= n || failed || ctx.Err() != nil {
					return
				}
				if err := do(i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// clientConfig is the controller's client configuration: its QPS and burst,
// over a connection of its own.
func clientConfig(c config, base *rest.Config) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.QPS = float32(c.qps)
	cfg.Burst = c.burst
	cfg.UserAgent = "database-controller-floor"
	// A dialer of its own keeps client-go from sharing the benchmark's
	// cached connection: the floor gets its own, as the controller process has.
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = d.DialContext
	return cfg
}

func runFloor(ctx context.Context, c config, base *rest.Config, obsKube kubernetes.Interface, obsDB clientset.Interface, ns string) (*floorRun, error) {
	if err := prepareVolumes(ctx, c, obsKube, ns, c.n); err != nil {
		return nil, err
	}
	counter := newRequestCounter()
	cfg := clientConfig(c, base)
	cfg.Wrap(counter.wrap)
	// Built-in kinds as protobuf, as the controller sends and reads them;
	// Databases have only JSON.
	kubeCfg := rest.CopyConfig(cfg)
	kubeCfg.ContentType = runtime.ContentTypeProtobuf
	kubeCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return nil, err
	}
	dbs, err := clientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	tr := newTracker()
	tctx, stopTracker := context.WithCancel(ctx)
	defer stopTracker()
	if err := tr.start(tctx, obsDB, obsKube, ns); err != nil {
		return nil, err
	}

	f := &floor{kube: kube, dbs: dbs, ns: ns, workers: c.workers, counter: counter}
	in := make(chan *dbv1alpha1.Database, c.n)
	out := &floorRun{phase: phase{name: "floor", ns: ns}, counter: counter}
	type floorDone struct {
		res floorResult
		err error
	}
	done := make(chan floorDone, 1)
	out.controlPlane.start, out.controlPlane.kcmStart = measure(ctx, c, base, obsKube, "floor")
	cpu0 := componentCPU(c.localDir, map[string]int{"bench (this program)": os.Getpid()})
	machine0 := machineBusySeconds()
	stopLoad := sampleLoad(&out.load)
	defer stopLoad()
	out.t0 = time.Now()
	profiled := profileAPIServer(pctx, c, obsKube, "floor")
	go func() {
		res, err := f.run(pctx, in, c.n)
		done <- floorDone{res, err}
	}()
	err = createDatabases(pctx, obsDB, ns, c.n, c.creators, c.storageClass(), func(db *dbv1alpha1.Database) { in <- db })
	close(in)
	out.created = time.Since(out.t0)
	if err != nil {
		return nil, err
	}
	fd := <-done
	out.result = fd.res
	if !fd.res.complete {
		return nil, fmt.Errorf("not all Databases Running within %s: %v", c.timeout, fd.err)
	}
	// The floor's own clock says its last write returned; the tracker's
	// watch, the one that also times the controller, sees it Running.
	for tr.runningCount() < c.n && pctx.Err() == nil {
		sleep(pctx, 10*time.Millisecond)
	}
	out.cpu = cpuSince(cpu0, componentCPU(c.localDir, map[string]int{"bench (this program)": os.Getpid()}))
	out.machineCPU = machineBusySeconds() - machine0
	stopLoad()
	out.controlPlane.running, out.controlPlane.kcmRunning = measure(ctx, c, base, obsKube, "floor")
	if evs, err := obsKube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err != nil {
		logf("floor: the namespace's events: %v", err)
	} else {
		out.controlPlane.countEvents(evs.Items)
	}
	stopTracker()
	out.running, out.stsCreated, out.stsReady = tr.curves(out.t0)
	out.claimWaits = tr.claimWaits()
	out.statusChanges = tr.statusTransitions()
	<-profiled
	out.allRunning = out.running.last(c.n)
	return out, nil
}

func cpuSince(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if b, ok := before[k]; ok {
			out[k] = v - b
		}
	}
	return out
}

// resyncWords says the controller's resync period as the benchmark sets it.
func (c config) resyncWords() string {
	if c.resync == 0 {
		return "the controller's own default (--resync-period not given: 10 min for this project's controller, 10 h for controller-runtime's SyncPeriod)"
	}
	return "--resync-period=" + c.resync.String()
}

// steadyResyncs is how many times each Database is resynced in the steady
// state: none with a controller's default resync, longer than any hold
// that makes sense.
func (c config) steadyResyncs() int {
	if c.resync == 0 {
		return 0
	}
	return int(c.hold / c.resync)
}

func runController(ctx context.Context, c config, cfg *rest.Config, obsKube kubernetes.Interface, obsDB clientset.Interface, ns string) (*controllerRun, error) {
	out := &controllerRun{phase: phase{name: "controller", ns: ns, allRunning: -1}}
	if err := prepareVolumes(ctx, c, obsKube, ns, c.n); err != nil {
		return nil, err
	}
	if v, err := exec.Command(c.controllerBin, "--version").Output(); err == nil {
		out.version = strings.TrimSpace(string(v))
	}
	args := []string{
		"--kubeconfig=" + c.kubeconfig,
		"--namespace=" + ns,
		fmt.Sprintf("--workers=%d", c.workers),
		fmt.Sprintf("--kube-api-qps=%g", c.qps),
		fmt.Sprintf("--kube-api-burst=%d", c.burst),
		"--profiling",
	}
	if c.resync > 0 {
		args = append(args, "--resync-period="+c.resync.String())
	}
	args = append(args, c.controllerArgs...)
	out.logPath = filepath.Join(c.workDir, "controller.log")
	p, err := startController(c.controllerBin, args, c.controllerEnv, out.logPath)
	if err != nil {
		return nil, err
	}
	out.args = p.args
	defer p.stop()
	if err := p.waitReady(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	if out.mReady, err = p.scrape(); err != nil {
		return nil, err
	}
	tr := newTracker()
	tctx, stopTracker := context.WithCancel(ctx)
	defer stopTracker()
	if err := tr.start(tctx, obsDB, obsKube, ns); err != nil {
		return nil, err
	}
	smp := startSampler(p, c.sampleEvery)
	pidOf := map[string]int{"controller": p.cmd.Process.Pid, "bench (this program)": os.Getpid()}
	out.controlPlane.start, out.controlPlane.kcmStart = measure(ctx, c, cfg, obsKube, "controller")
	cpu0 := componentCPU(c.localDir, pidOf)
	machine0 := machineBusySeconds()
	stopLoad := sampleLoad(&out.load)
	defer stopLoad()

	pctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	out.t0 = time.Now()
	profiled := profileAPIServer(pctx, c, obsKube, "controller")
	defer func() { <-profiled }()
	cpuProfiled := profileController(pctx, c, p, out)
	defer func() { <-cpuProfiled }()
	if err := createDatabases(pctx, obsDB, ns, c.n, c.creators, c.storageClass(), func(*dbv1alpha1.Database) {}); err != nil {
		smp.finish()
		return nil, err
	}
	out.created = time.Since(out.t0)
	halfProfiled := make(chan struct{})
	halfTaken := false
	for tr.runningCount() < c.n && pctx.Err() == nil && p.running() {
		if !halfTaken && tr.runningCount() >= c.n/2 {
			halfTaken = true
			go func() {
				defer close(halfProfiled)
				path := filepath.Join(c.workDir, "controller-heap-half.pprof")
				top, err := p.heapProfile(path, c.controllerBin)
				if err != nil {
					logf("controller: the heap profile at half Running: %v", err)
					return
				}
				out.halfHeapProfile, out.halfHeapTop = path, top
			}()
		}
		sleep(pctx, 10*time.Millisecond)
	}
	if halfTaken {
		<-halfProfiled
	}
	switch {
	case !p.running():
		smp.finish()
		return nil, fmt.Errorf("the controller exited; log %s:\n%s", out.logPath, tail(out.logPath, 20))
	case tr.runningCount() >= c.n:
		out.converged = true
	default:
		out.waited = time.Since(out.t0)
		logf("controller: only %d of %d Databases Running after %s (the limit is %s)", tr.runningCount(), c.n, fmtDur(out.waited), c.timeout)
	}
	out.cpu = cpuSince(cpu0, componentCPU(c.localDir, pidOf))
	out.machineCPU = machineBusySeconds() - machine0
	stopLoad()
	out.controlPlane.running, out.controlPlane.kcmRunning = measure(ctx, c, cfg, obsKube, "controller")
	if out.mRunning, err = p.scrape(); err != nil {
		smp.finish()
		return nil, err
	}
	out.mSettled, out.mSteady = out.mRunning, out.mRunning
	out.steadyStart = time.Since(out.t0)
	if out.converged {
		running, _, _ := tr.curves(out.t0)
		logf("controller: all %d Running after %s", c.n, fmtDur(running.last(c.n)))
	}

	if out.converged {
		// Writes already under way when the last Database turned Running
		// (an Event still in the broadcaster's queue) are counted apart.
		sleep(ctx, c.settle)
		if out.mSettled, err = p.scrape(); err != nil {
			smp.finish()
			return nil, err
		}
		out.steadyStart = time.Since(out.t0)
		logf("controller: holding the steady state for %s", c.hold)
		sleep(ctx, c.hold)
		if ctx.Err() != nil {
			smp.finish()
			return nil, ctx.Err()
		}
		if out.mSteady, err = p.scrape(); err != nil {
			smp.finish()
			return nil, err
		}
		out.heapProfile = filepath.Join(c.workDir, "controller-heap.pprof")
		if out.heapTop, err = p.heapProfile(out.heapProfile, c.controllerBin); err != nil {
			logf("controller: the heap profile: %v", err)
			out.heapProfile = ""
		}
	}
	out.steadyEnd = time.Since(out.t0)
	out.samples = smp.finish()
	if out.peakRSS, err = p.peakRSS(); err != nil {
		logf("reading VmHWM: %v", err)
	}
	if out.endRSSAnon, out.endRSSFile, err = p.endRSS(); err != nil {
		logf("reading RssAnon and RssFile: %v", err)
	}
	stopTracker()
	out.running, out.stsCreated, out.stsReady = tr.curves(out.t0)
	out.claimWaits = tr.claimWaits()
	out.statusChanges = tr.statusTransitions()
	if out.converged {
		out.allRunning = out.running.last(c.n)
	}
	out.children, err = countChildren(ctx, obsKube, ns)
	if err != nil {
		return nil, err
	}
	p.stop()
	out.eventsLogged = countLoggedEvents(out.logPath)
	out.eventsStored, out.eventsStoredSum = map[string]int{}, map[string]int{}
	// One LIST of the namespace's events serves both tables: every
	// component's, and the controller's own about Databases.
	evs, err := obsKube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out.controlPlane.countEvents(evs.Items)
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind != "Database" {
			continue
		}
		out.eventsStored[e.Reason]++
		out.eventsStoredSum[e.Reason] += int(max(e.Count, 1))
	}
	return out, nil
}

// profileAPIServer takes, when asked, a CPU profile of kube-apiserver
// (its --profiling is on by default) from 5 s on, into
// apiserver-<run>.pprof in the work directory. The channel is closed when
// it is done.
func profileAPIServer(ctx context.Context, c config, kube kubernetes.Interface, run string) <-chan struct{} {
	return afterFirstCreates(ctx, c.apiserverProfile > 0, func() {
		b, err := kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(int(c.apiserverProfile.Seconds()))).DoRaw(ctx)
		if err != nil {
			logf("%s: the API server's CPU profile: %v", run, err)
			return
		}
		path := filepath.Join(c.workDir, "apiserver-"+run+".pprof")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			logf("%s: %v", run, err)
			return
		}
		logf("%s: the API server's CPU profile is in %s", run, path)
	})
}

// profileController takes, when asked, a CPU profile of the controller
// from 5 s on, into controller-cpu.pprof in the work directory, and puts
// its path and top functions in out. The channel is closed when it is done.
func profileController(ctx context.Context, c config, p *controllerProc, out *controllerRun) <-chan struct{} {
	return afterFirstCreates(ctx, c.controllerProfile > 0, func() {
		path := filepath.Join(c.workDir, "controller-cpu.pprof")
		top, err := p.cpuProfile(ctx, path, c.controllerBin, c.controllerProfile)
		if err != nil {
			logf("controller: its CPU profile: %v", err)
			return
		}
		out.cpuProfile, out.cpuTop = path, top
		logf("controller: its CPU profile is in %s", path)
	})
}

// afterFirstCreates runs take in the background, when on, 5 s after a
// run's first create: past the start, in the thick of the work. The
// channel is closed when take is done, or at once when not on.
func afterFirstCreates(ctx context.Context, on bool, take func()) <-chan struct{} {
	done := make(chan struct{})
	if !on {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		sleep(ctx, 5*time.Second)
		take()
	}()
	return done
}

// countLoggedEvents counts, by reason, the events the controller logged
// as it recorded them (its event broadcaster logs each one at -v=0).
func countLoggedEvents(logPath string) map[string]int {
	out := map[string]int{}
	f, err := os.Open(logPath)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `"Event occurred"`) {
			continue
		}
		_, rest, ok := strings.Cut(line, ` reason="`)
		if !ok {
			continue
		}
		reason, _, _ := strings.Cut(rest, `"`)
		out[reason]++
	}
	return out
}

// countChildren counts the objects the controller's informers hold: those
// labelled as managed by it, in its namespace.
func countChildren(ctx context.Context, kube kubernetes.Interface, ns string) (map[string]int, error) {
	sel := metav1.ListOptions{LabelSelector: names.ManagedSelector()}
	out := map[string]int{}
	secrets, err := kube.CoreV1().Secrets(ns).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	out["Secrets"] = len(secrets.Items)
	svcs, err := kube.CoreV1().Services(ns).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	out["Services"] = len(svcs.Items)
	sets, err := kube.AppsV1().StatefulSets(ns).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	out["StatefulSets"] = len(sets.Items)
	pods, err := kube.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	out["Pods"] = len(pods.Items)
	claims, err := kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	out["PersistentVolumeClaims"] = len(claims.Items)
	return out, nil
}

func fmtDur(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

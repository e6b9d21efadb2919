//go:build e2e

// Package e2e runs the real ./controller binary against a real local
// control plane (hack/local-up.sh) and drives it with kubectl, as a user
// would. Each test works in its own namespace with its own controller
// process, limited to that namespace.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// Where things are, set up by TestMain.
var (
	root          string // repository root
	localDir      string // state of the local control plane
	kubeconfig    string // admin kubeconfig
	kubectlBin    string
	controllerBin string
	apiserverPort string
)

// The identity of the install manifests: the controller runs under it in
// in-cluster mode, which proves the RBAC in artifacts/deploy is sufficient.
const (
	installNamespace = "database-controller-system"
	serviceAccount   = "database-controller"
	saDir            = "/var/run/secrets/kubernetes.io/serviceaccount"
	// toolsImage is the controller's --tools-image.
	toolsImage = "localhost/dbc/controller:dev"
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	wd, _ := os.Getwd()
	root = filepath.Clean(filepath.Join(wd, "..", ".."))
	kubectlBin = filepath.Join(root, "_output", "bin", "kubectl")
	controllerBin = filepath.Join(root, "_output", "e2e-controller")
	localDir = e2eutil.EnvOr("E2E_LOCAL_DIR", filepath.Join(root, "_output", "e2e"))
	apiserverPort = e2eutil.EnvOr("E2E_APISERVER_PORT", "16443")
	e2eutil.Setup(e2eutil.Config{
		LogPrefix:       "e2e",
		Kubectl:         kubectlBin,
		Kubeconfig:      filepath.Join(localDir, "kubeconfig"),
		NamespacePrefix: "e2e-",
		Poll:            300 * time.Millisecond,
		EventsOnFailure: 8,
	})

	e2eutil.Logf("building the controller")
	if out, err := e2eutil.Run(exec.Command(filepath.Join(root, "hack", "build.sh")), "OUT="+controllerBin); err != nil {
		e2eutil.Logf("build failed: %v\n%s", err, out)
		return 1
	}

	if os.Getenv("E2E_REUSE_CLUSTER") == "" {
		if code := startControlPlane(); code != 0 {
			return code
		}
		defer stopControlPlane()
	}
	kubeconfig = filepath.Join(localDir, "kubeconfig")

	if code := install(); code != 0 {
		return code
	}
	return m.Run()
}

// startControlPlane runs hack/local-up.sh on ports of its own, so that the
// suite never collides with a `make run-local` cluster.
func startControlPlane() int {
	e2eutil.Logf("starting the local control plane in %s", localDir)
	start := time.Now()
	cmd := exec.Command(filepath.Join(root, "hack", "local-up.sh"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(),
		"LOCAL_DIR="+localDir,
		"LOCAL_APISERVER_PORT="+apiserverPort,
		"LOCAL_ETCD_PORT="+e2eutil.EnvOr("E2E_ETCD_PORT", "12379"),
		"LOCAL_ETCD_PEER_PORT="+e2eutil.EnvOr("E2E_ETCD_PEER_PORT", "12380"),
		"LOCAL_CONTROLLER_MANAGER_PORT="+e2eutil.EnvOr("E2E_KCM_PORT", "20257"),
		"LOCAL_SCHEDULER_PORT="+e2eutil.EnvOr("E2E_SCHEDULER_PORT", "20259"),
		"LOCAL_KWOK_PORT="+e2eutil.EnvOr("E2E_KWOK_PORT", "20247"),
		"LOCAL_OBJECTSTORE_PORT="+e2eutil.EnvOr("E2E_OBJECTSTORE_PORT", "20070"),
	)
	if err := cmd.Run(); err != nil {
		e2eutil.Logf("local control plane failed to start: %v", err)
		return 1
	}
	e2eutil.Logf("local control plane is up after %s", time.Since(start).Round(time.Second))
	return 0
}

func stopControlPlane() {
	cmd := exec.Command(filepath.Join(root, "hack", "local-down.sh"))
	cmd.Env = append(os.Environ(), "LOCAL_DIR="+localDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		e2eutil.Logf("local-down: %v\n%s", err, out)
	}
}

// install applies artifacts/deploy, as a user installing the controller
// would, and writes a token for its ServiceAccount where in-cluster clients
// look for it.
func install() int {
	e2eutil.Logf("installing with kubectl apply -k artifacts/deploy")
	if out, err := e2eutil.KubectlRun("", "apply", "-k", filepath.Join(root, "artifacts", "deploy")); err != nil {
		e2eutil.Logf("kubectl apply -k artifacts/deploy: %v\n%s", err, out)
		return 1
	}
	// The Prometheus Operator's PodMonitor API, which the controllers
	// discover at start: a monitored Database gets a PodMonitor.
	if out, err := e2eutil.KubectlRun("", "apply", "-f", filepath.Join(root, "test", "e2e", "testdata", "podmonitor-crd.yaml")); err != nil {
		e2eutil.Logf("kubectl apply the PodMonitor CRD: %v\n%s", err, out)
		return 1
	}
	if err := e2eutil.WaitEstablished(time.Minute, "databases.dbcontroller.io", "databasebackups.dbcontroller.io", "podmonitors.monitoring.coreos.com"); err != nil {
		e2eutil.Logf("%v", err)
		return 1
	}
	token, err := e2eutil.KubectlRun("", "create", "token", serviceAccount, "-n", installNamespace, "--duration=4h")
	if err != nil {
		e2eutil.Logf("kubectl create token: %v\n%s", err, token)
		return 1
	}
	ca, err := os.ReadFile(filepath.Join(localDir, "certs", "ca.crt"))
	if err != nil {
		e2eutil.Logf("reading the cluster CA: %v", err)
		return 1
	}
	if err := os.MkdirAll(saDir, 0o755); err != nil {
		e2eutil.Logf("creating %s: %v", saDir, err)
		return 1
	}
	for name, content := range map[string][]byte{
		"token":     bytes.TrimSpace(token),
		"ca.crt":    ca,
		"namespace": []byte(installNamespace),
	} {
		if err := os.WriteFile(filepath.Join(saDir, name), content, 0o600); err != nil {
			e2eutil.Logf("writing %s: %v", name, err)
			return 1
		}
	}
	return 0
}

// waitCondition waits until a Database's condition has the given status and reason.
func waitCondition(t testing.TB, ns, name, condType, status, reason string, timeout time.Duration) *dbv1alpha1.Database {
	t.Helper()
	var db *dbv1alpha1.Database
	e2eutil.Eventually(t, timeout, fmt.Sprintf("%s=%s (%s) on %s/%s", condType, status, reason, ns, name), func() (bool, string) {
		db = e2eutil.GetDB(t, ns, name)
		s, r, m := e2eutil.Condition(db, condType)
		return s == status && r == reason, fmt.Sprintf("%s=%s reason=%s message=%q phase=%s", condType, s, r, m, db.Status.Phase)
	})
	return db
}

// events lists "Type Reason Message" of the events on a Database.
func events(t testing.TB, ns, name string) []string {
	t.Helper()
	var list struct {
		Items []struct {
			Type, Reason, Message string
		}
	}
	e2eutil.GetJSON(t, &list, "-n", ns, "get", "events", "--field-selector", "involvedObject.kind=Database,involvedObject.name="+name)
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Type+" "+e.Reason+" "+e.Message)
	}
	return out
}

func waitEvent(t testing.TB, ns, name, prefix string, timeout time.Duration) {
	t.Helper()
	e2eutil.Eventually(t, timeout, fmt.Sprintf("event %q on %s/%s", prefix, ns, name), func() (bool, string) {
		evs := events(t, ns, name)
		for _, e := range evs {
			if strings.HasPrefix(e, prefix) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("events: %q", evs)
	})
}

// controllerProcess is one ./controller subprocess.
type controllerProcess struct {
	t           testing.TB
	cmd         *exec.Cmd
	logPath     string
	metricsAddr string
	healthAddr  string
	exited      chan struct{}
}

type controllerOptions struct {
	// namespace limits the controller to one namespace ("" for all).
	namespace string
	// kubeconfigMode runs with the admin --kubeconfig instead of the
	// in-cluster ServiceAccount identity.
	kubeconfigMode bool
	// args are further flags.
	args []string
}

// startController starts ./controller and stops it (SIGTERM) when the test
// ends. freeAddress's ports are free when chosen but may be taken before
// the controller binds them (by any connection's ephemeral port): a
// controller that exits at start for that is started again on other ports,
// twice at most.
func startController(t testing.TB, o controllerOptions) *controllerProcess {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p, inUse := tryStartController(t, o)
		if !inUse {
			return p
		}
		if attempt == 3 {
			t.Fatalf("the controller found its ports taken 3 times:\n%s", tail(p.logPath, 30))
		}
		t.Logf("the controller's port was taken before it bound it; starting it again on other ports")
	}
}

// tryStartController starts ./controller and waits for /readyz; inUse
// says it exited at start because a port it was given was taken.
func tryStartController(t testing.TB, o controllerOptions) (p *controllerProcess, inUse bool) {
	t.Helper()
	p = &controllerProcess{t: t, metricsAddr: freeAddress(t), healthAddr: freeAddress(t), exited: make(chan struct{})}
	args := []string{
		"--metrics-bind-address=" + p.metricsAddr,
		"--health-probe-bind-address=" + p.healthAddr,
		// kwok's pods never run it: the name is what the Jobs must carry.
		"--tools-image=" + toolsImage,
		"-v=2",
	}
	if o.namespace != "" {
		args = append(args, "--namespace="+o.namespace)
	}
	// client-go keeps a copy of each object its informers cache, for two
	// minutes, and panics, naming the kind, if the cached one changes: a
	// reader wrote into the cache, which every reader shares (it must
	// DeepCopy first).
	env := append(os.Environ(), "KUBE_CACHE_MUTATION_DETECTOR=true")
	if o.kubeconfigMode {
		args = append(args, "--kubeconfig="+kubeconfig)
	} else {
		// In-cluster mode, exactly as in a pod: the service host and port,
		// and the ServiceAccount token and CA under saDir.
		env = append(env, "KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT="+apiserverPort, "POD_NAMESPACE="+installNamespace)
	}
	args = append(args, o.args...)
	logFile, err := os.CreateTemp(filepath.Join(root, "_output"), "controller-*.log")
	if err != nil {
		t.Fatal(err)
	}
	p.logPath = logFile.Name()
	p.cmd = exec.Command(controllerBin, args...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); logFile.Close(); close(p.exited) }()
	t.Cleanup(func() {
		if p.running() {
			// The detector compares the cache with its copies once a
			// second: a write in the test's last second is compared too.
			// (Planted in the controller's sync, TestCreate, 17 s, passed
			// without this wait.)
			time.Sleep(mutationCheckPeriod)
		}
		p.stop()
		if log, err := os.ReadFile(p.logPath); err == nil && bytes.Contains(log, []byte("panic: cache ")) {
			// Its last lines follow; the detector's diff ("CACHE ...
			// ALTERED!") is before the panic in the log.
			t.Errorf("the controller wrote into an object of its informers' caches: see CACHE ... ALTERED! in %s", p.logPath)
		}
		if t.Failed() {
			t.Logf("controller log %s (last lines):\n%s", p.logPath, tail(p.logPath, 40))
		}
	})
	e2eutil.Eventually(t, 60*time.Second, "controller /readyz", func() (bool, string) {
		select {
		case <-p.exited:
			if strings.Contains(tail(p.logPath, 5), "bind: address already in use") {
				inUse = true
				return true, ""
			}
			t.Fatalf("controller exited at start:\n%s", tail(p.logPath, 30))
		default:
		}
		code, body := p.get("/readyz", p.healthAddr)
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})
	return p, inUse
}

func (p *controllerProcess) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// mutationCheckPeriod is a little more than how often client-go's cache
// mutation detector compares each informer's objects with its copies (1 s).
const mutationCheckPeriod = 1100 * time.Millisecond

// stop sends SIGTERM and waits for a clean exit.
func (p *controllerProcess) stop() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		p.t.Errorf("controller did not exit within 60s of SIGTERM")
		p.kill()
	}
}

// kill sends SIGKILL: no chance to clean up.
func (p *controllerProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

func (p *controllerProcess) get(path, addr string) (int, string) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metrics scrapes /metrics into a map from "name{labels}" to value.
func (p *controllerProcess) metrics() map[string]float64 {
	p.t.Helper()
	m, err := e2eutil.ScrapeMetrics(p.metricsAddr)
	if err != nil {
		p.t.Fatal(err)
	}
	return m
}

// expectNoFailedSyncs fails t when the controller had a sync that ended in
// an error (retried with backoff), with its log's last lines: what the
// test did is expected to need none.
func (p *controllerProcess) expectNoFailedSyncs() {
	p.t.Helper()
	if n := sum(p.metrics(), "database_controller_reconcile_total", `result="error"`); n != 0 {
		p.t.Errorf("the controller had %v failed syncs; its log's last lines:\n%s", n, tail(p.logPath, 20))
	}
}

// sum adds every series of a metric whose labels contain all of match.
func sum(m map[string]float64, name string, match ...string) float64 {
	return e2eutil.SumMetric(m, name, match...)
}

// writes is the number of mutating requests the controller has made.
func writes(m map[string]float64) float64 {
	var n float64
	for _, method := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		n += sum(m, "rest_client_requests_total", `method="`+method+`"`)
	}
	return n
}

func freeAddress(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// createFromExample creates an example from artifacts/examples in ns and
// returns its name.
func createFromExample(t testing.TB, ns, file string) string {
	t.Helper()
	out := e2eutil.Kubectl(t, "-n", ns, "create", "-f", filepath.Join(root, "artifacts", "examples", file), "-o", "name")
	return strings.TrimPrefix(strings.TrimSpace(out), "database.dbcontroller.io/")
}

// createDB creates a Database from YAML in ns.
func createDB(t testing.TB, ns, yaml string) {
	t.Helper()
	e2eutil.KubectlIn(t, yaml, "-n", ns, "create", "-f", "-")
}

func dbYAML(name, engine, version string, replicas int, extra string) string {
	return fmt.Sprintf(`apiVersion: dbcontroller.io/v1alpha1
kind: Database
metadata:
  name: %s
spec:
  engine: %s
  version: %q
  replicas: %d
%s`, name, engine, version, replicas, extra)
}

var _ = context.Background

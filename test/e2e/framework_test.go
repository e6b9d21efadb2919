//go:build e2e

// Package e2e runs the real ./controller binary against a real local
// control plane (hack/local-up.sh) and drives it with kubectl, as a user
// would. Each test works in its own namespace with its own controller
// process, limited to that namespace.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
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
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	wd, _ := os.Getwd()
	root = filepath.Clean(filepath.Join(wd, "..", ".."))
	kubectlBin = filepath.Join(root, "_output", "bin", "kubectl")
	controllerBin = filepath.Join(root, "_output", "e2e-controller")
	localDir = envOr("E2E_LOCAL_DIR", filepath.Join(root, "_output", "e2e"))
	apiserverPort = envOr("E2E_APISERVER_PORT", "16443")

	logf("building the controller")
	if out, err := runCmd(exec.Command(filepath.Join(root, "hack", "build.sh")), "OUT="+controllerBin); err != nil {
		logf("build failed: %v\n%s", err, out)
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

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[e2e %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func runCmd(cmd *exec.Cmd, env ...string) ([]byte, error) {
	cmd.Env = append(os.Environ(), env...)
	return cmd.CombinedOutput()
}

// startControlPlane runs hack/local-up.sh on ports of its own, so that the
// suite never collides with a `make run-local` cluster.
func startControlPlane() int {
	logf("starting the local control plane in %s", localDir)
	start := time.Now()
	cmd := exec.Command(filepath.Join(root, "hack", "local-up.sh"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(),
		"LOCAL_DIR="+localDir,
		"LOCAL_APISERVER_PORT="+apiserverPort,
		"LOCAL_ETCD_PORT="+envOr("E2E_ETCD_PORT", "12379"),
		"LOCAL_ETCD_PEER_PORT="+envOr("E2E_ETCD_PEER_PORT", "12380"),
		"LOCAL_CONTROLLER_MANAGER_PORT="+envOr("E2E_KCM_PORT", "20257"),
		"LOCAL_SCHEDULER_PORT="+envOr("E2E_SCHEDULER_PORT", "20259"),
		"LOCAL_KWOK_PORT="+envOr("E2E_KWOK_PORT", "20247"),
	)
	if err := cmd.Run(); err != nil {
		logf("local control plane failed to start: %v", err)
		return 1
	}
	logf("local control plane is up after %s", time.Since(start).Round(time.Second))
	return 0
}

func stopControlPlane() {
	cmd := exec.Command(filepath.Join(root, "hack", "local-down.sh"))
	cmd.Env = append(os.Environ(), "LOCAL_DIR="+localDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		logf("local-down: %v\n%s", err, out)
	}
}

// install applies artifacts/deploy, as a user installing the controller
// would, and writes a token for its ServiceAccount where in-cluster clients
// look for it.
func install() int {
	logf("installing with kubectl apply -k artifacts/deploy")
	if out, err := kubectlRun("", "apply", "-k", filepath.Join(root, "artifacts", "deploy")); err != nil {
		logf("kubectl apply -k artifacts/deploy: %v\n%s", err, out)
		return 1
	}
	if out, err := kubectlRun("", "wait", "--for=condition=Established", "--timeout=60s",
		"crd/databases.dbcontroller.io", "crd/databasebackups.dbcontroller.io"); err != nil {
		logf("CRD not established: %v\n%s", err, out)
		return 1
	}
	token, err := kubectlRun("", "create", "token", serviceAccount, "-n", installNamespace, "--duration=4h")
	if err != nil {
		logf("kubectl create token: %v\n%s", err, token)
		return 1
	}
	ca, err := os.ReadFile(filepath.Join(localDir, "certs", "ca.crt"))
	if err != nil {
		logf("reading the cluster CA: %v", err)
		return 1
	}
	if err := os.MkdirAll(saDir, 0o755); err != nil {
		logf("creating %s: %v", saDir, err)
		return 1
	}
	for name, content := range map[string][]byte{
		"token":     bytes.TrimSpace(token),
		"ca.crt":    ca,
		"namespace": []byte(installNamespace),
	} {
		if err := os.WriteFile(filepath.Join(saDir, name), content, 0o600); err != nil {
			logf("writing %s: %v", name, err)
			return 1
		}
	}
	return 0
}

// kubectl runs kubectl as the cluster admin and fails the test on error.
func kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := kubectlRun("", args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// kubectlIn is kubectl with standard input.
func kubectlIn(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectlRun(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func kubectlRun(stdin string, args ...string) ([]byte, error) {
	cmd := exec.Command(kubectlBin, append([]string{"--kubeconfig", filepath.Join(localDir, "kubeconfig")}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	return cmd.CombinedOutput()
}

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := strings.ToLower(regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "-"))
	if len(name) > 40 {
		name = name[:40]
	}
	ns := "e2e-" + strings.Trim(name, "-") + "-" + hex.EncodeToString(b)
	kubectl(t, "create", "namespace", ns)
	t.Cleanup(func() {
		if os.Getenv("E2E_KEEP_NAMESPACES") == "" {
			_, _ = kubectlRun("", "delete", "namespace", ns, "--wait=false")
		}
	})
	return ns
}

// eventually polls cond until it returns true, failing after timeout with
// cond's last explanation.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, last)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// getDB reads a Database through kubectl.
func getDB(t testing.TB, ns, name string) *dbv1alpha1.Database {
	t.Helper()
	db := &dbv1alpha1.Database{}
	getJSON(t, db, "-n", ns, "get", "database", name)
	return db
}

func getJSON(t testing.TB, into any, args ...string) {
	t.Helper()
	out := kubectl(t, append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), into); err != nil {
		t.Fatalf("decoding kubectl %v: %v", args, err)
	}
}

func condition(db *dbv1alpha1.Database, condType string) (status, reason, message string) {
	for _, c := range db.Status.Conditions {
		if c.Type == condType {
			return string(c.Status), c.Reason, c.Message
		}
	}
	return "", "", ""
}

// waitRunning waits until the Database is Running with every replica ready.
func waitRunning(t testing.TB, ns, name string, timeout time.Duration) *dbv1alpha1.Database {
	t.Helper()
	var db *dbv1alpha1.Database
	eventually(t, timeout, "Database "+ns+"/"+name+" to be Running", func() (bool, string) {
		db = getDB(t, ns, name)
		return isRunning(db)
	})
	return db
}

// isRunning tells whether a Database is Running with every replica ready
// and its status up to date, and if not, why.
func isRunning(db *dbv1alpha1.Database) (bool, string) {
	want := int32(1)
	if db.Spec.Replicas != nil {
		want = *db.Spec.Replicas
	}
	ready, _, _ := condition(db, "Ready")
	ok := db.Status.Phase == dbv1alpha1.PhaseRunning && db.Status.ReadyReplicas == want &&
		ready == "True" && db.Status.ObservedGeneration == db.Generation
	return ok, fmt.Sprintf("phase=%s ready=%d/%d Ready=%s", db.Status.Phase, db.Status.ReadyReplicas, want, ready)
}

// waitCondition waits until a Database's condition has the given status and reason.
func waitCondition(t testing.TB, ns, name, condType, status, reason string, timeout time.Duration) *dbv1alpha1.Database {
	t.Helper()
	var db *dbv1alpha1.Database
	eventually(t, timeout, fmt.Sprintf("%s=%s (%s) on %s/%s", condType, status, reason, ns, name), func() (bool, string) {
		db = getDB(t, ns, name)
		s, r, m := condition(db, condType)
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
	getJSON(t, &list, "-n", ns, "get", "events", "--field-selector", "involvedObject.kind=Database,involvedObject.name="+name)
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Type+" "+e.Reason+" "+e.Message)
	}
	return out
}

func waitEvent(t testing.TB, ns, name, prefix string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("event %q on %s/%s", prefix, ns, name), func() (bool, string) {
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

// startController starts ./controller and stops it (SIGTERM) when the test ends.
func startController(t testing.TB, o controllerOptions) *controllerProcess {
	t.Helper()
	p := &controllerProcess{t: t, metricsAddr: freeAddress(t), healthAddr: freeAddress(t), exited: make(chan struct{})}
	args := []string{
		"--metrics-bind-address=" + p.metricsAddr,
		"--health-probe-bind-address=" + p.healthAddr,
		"-v=2",
	}
	if o.namespace != "" {
		args = append(args, "--namespace="+o.namespace)
	}
	env := os.Environ()
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
		p.stop()
		if t.Failed() {
			t.Logf("controller log %s (last lines):\n%s", p.logPath, tail(p.logPath, 40))
		}
	})
	eventually(t, 60*time.Second, "controller /readyz", func() (bool, string) {
		select {
		case <-p.exited:
			t.Fatalf("controller exited at start:\n%s", tail(p.logPath, 30))
		default:
		}
		code, body := p.get("/readyz", p.healthAddr)
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})
	return p
}

func (p *controllerProcess) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

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
	code, body := p.get("/metrics", p.metricsAddr)
	if code != http.StatusOK {
		p.t.Fatalf("GET /metrics: %d %s", code, body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// sum adds every series of a metric whose labels contain all of match.
func sum(m map[string]float64, name string, match ...string) float64 {
	var total float64
	for k, v := range m {
		if !strings.HasPrefix(k, name+"{") && k != name {
			continue
		}
		ok := true
		for _, s := range match {
			if !strings.Contains(k, s) {
				ok = false
			}
		}
		if ok {
			total += v
		}
	}
	return total
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
	out := kubectl(t, "-n", ns, "create", "-f", filepath.Join(root, "artifacts", "examples", file), "-o", "name")
	return strings.TrimPrefix(strings.TrimSpace(out), "database.dbcontroller.io/")
}

// createDB creates a Database from YAML in ns.
func createDB(t testing.TB, ns, yaml string) {
	t.Helper()
	kubectlIn(t, yaml, "-n", ns, "create", "-f", "-")
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

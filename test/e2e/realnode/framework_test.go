//go:build e2e

// Package realnode runs the controller against a local control plane with a
// real node (hack/local-up.sh with LOCAL_REAL_NODE=1: containerd, runc, a
// kubelet, kube-proxy and CoreDNS), so that its StatefulSets run real
// PostgreSQL and MariaDB servers from the images hack/images builds. It needs
// root. The kwok suite (test/e2e) stays the fast and broad one; this one
// checks what kwok cannot: that the pods the controller builds really serve.
//
// After the suite, TestMain stops the node and compares the host with what
// it was before the node started: sysctls, iptables, links, mounts, network
// namespaces, cgroups, leftover processes and host paths.
package realnode

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// The images hack/images/build.sh makes (hack/images/names.sh).
const (
	postgresImage = "localhost/dbc/postgresql:15"
	mariadbImage  = "localhost/dbc/mariadb:10.11"
	// slowInitImage is postgresImage with a first-init script that takes
	// longer than the liveness budget (hack/images/postgresql/slow-init.sh).
	slowInitImage = "localhost/dbc/postgresql-slowinit:15"
)

// How long a Database may take to converge on the real node: the image is
// already there, but a server initialises its data directory first.
const converge = 3 * time.Minute

var (
	root       string
	localDir   string
	kubectlBin string
	// controller is the suite's one controller process.
	controller struct {
		mu    sync.Mutex
		cmd   *exec.Cmd
		start func() (*exec.Cmd, error)
	}
)

// killController kills the suite's controller with SIGKILL, as a crash
// would: it finishes nothing it was doing.
func killController(t testing.TB) {
	t.Helper()
	controller.mu.Lock()
	defer controller.mu.Unlock()
	if err := controller.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("killing the controller: %v", err)
	}
	_ = controller.cmd.Wait()
}

// startController starts the suite's controller again, after killController.
func startController(t testing.TB) {
	t.Helper()
	controller.mu.Lock()
	defer controller.mu.Unlock()
	cmd, err := controller.start()
	if err != nil {
		t.Fatalf("starting the controller again: %v", err)
	}
	controller.cmd = cmd
}

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) (code int) {
	wd, _ := os.Getwd()
	root = filepath.Clean(filepath.Join(wd, "..", "..", ".."))
	kubectlBin = filepath.Join(root, "_output", "bin", "kubectl")
	localDir = envOr("E2E_NODE_LOCAL_DIR", filepath.Join(root, "_output", "e2e-node"))
	if os.Geteuid() != 0 {
		logf("the real-node suite needs root (containerd, runc, network namespaces); run make test as root")
		return 1
	}
	controllerBin := filepath.Join(root, "_output", "e2e-node-controller")
	logf("building the controller")
	if out, err := run(exec.Command(filepath.Join(root, "hack", "build.sh")), "OUT="+controllerBin); err != nil {
		logf("build failed: %v\n%s", err, out)
		return 1
	}

	before := hostState()
	logf("starting the local control plane with a real node in %s", localDir)
	start := time.Now()
	up := exec.Command(filepath.Join(root, "hack", "local-up.sh"))
	up.Stdout, up.Stderr = os.Stderr, os.Stderr
	up.Env = append(os.Environ(), localEnv()...)
	upErr := up.Run()
	defer func() {
		stop := time.Now()
		down := exec.Command(filepath.Join(root, "hack", "local-down.sh"))
		down.Env = append(os.Environ(), "LOCAL_DIR="+localDir)
		if out, err := down.CombinedOutput(); err != nil {
			logf("local-down: %v\n%s", err, out)
			code = 1
		}
		logf("local-down took %s", time.Since(stop).Round(100*time.Millisecond))
		// Stopping must leave the host as it was.
		if diff := diffStates(before, hostState()); diff != "" {
			logf("FAIL: stopping the real node left the host changed:\n%s", diff)
			code = 1
		} else {
			logf("the host is as it was before the node started (%d facts compared)", len(before))
		}
	}()
	if upErr != nil {
		logf("local control plane failed to start: %v", upErr)
		return 1
	}
	logf("local control plane with a real node is up after %s", time.Since(start).Round(100*time.Millisecond))

	if out, err := kubectlRun("", "apply", "-k", filepath.Join(root, "artifacts", "crd")); err != nil {
		logf("installing the CRDs: %v\n%s", err, out)
		return 1
	}
	if out, err := kubectlRun("", "wait", "--for=condition=Established", "--timeout=60s",
		"crd/databases.dbcontroller.io", "crd/databasebackups.dbcontroller.io"); err != nil {
		logf("CRD not established: %v\n%s", err, out)
		return 1
	}
	logPath := filepath.Join(root, "_output", "e2e-node-controller.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer logFile.Close()
	controller.start = func() (*exec.Cmd, error) {
		ctrl := exec.Command(controllerBin, "--kubeconfig="+filepath.Join(localDir, "kubeconfig"),
			"--metrics-bind-address=0", "--health-probe-bind-address=0", "-v=2")
		ctrl.Stdout, ctrl.Stderr = logFile, logFile
		return ctrl, ctrl.Start()
	}
	if controller.cmd, err = controller.start(); err != nil {
		logf("starting the controller: %v", err)
		return 1
	}
	defer func() {
		controller.mu.Lock()
		defer controller.mu.Unlock()
		_ = controller.cmd.Process.Signal(syscall.SIGTERM)
		_ = controller.cmd.Wait()
	}()
	suiteStart := time.Now()
	code = m.Run()
	logf("real-node tests took %s (controller log: %s)", time.Since(suiteStart).Round(100*time.Millisecond), logPath)
	return code
}

// localEnv gives the suite's control plane a directory and ports of its own,
// apart from the kwok suite's and from `make run-local`'s.
func localEnv() []string {
	return []string{
		"LOCAL_DIR=" + localDir,
		"LOCAL_REAL_NODE=1",
		// Local volumes are never reused once released (reclaim policy
		// Retain): one per Database, backup volume and claim of the suite.
		"LOCAL_REAL_NODE_VOLUMES=" + envOr("E2E_NODE_VOLUMES", "40"),
		"SKIP_BUILD=" + envOr("E2E_NODE_SKIP_BUILD", "1"),
		"LOCAL_APISERVER_PORT=" + envOr("E2E_NODE_APISERVER_PORT", "17443"),
		"LOCAL_ETCD_PORT=" + envOr("E2E_NODE_ETCD_PORT", "13379"),
		"LOCAL_ETCD_PEER_PORT=" + envOr("E2E_NODE_ETCD_PEER_PORT", "13380"),
		"LOCAL_CONTROLLER_MANAGER_PORT=" + envOr("E2E_NODE_KCM_PORT", "21257"),
		"LOCAL_SCHEDULER_PORT=" + envOr("E2E_NODE_SCHEDULER_PORT", "21259"),
		"LOCAL_KWOK_PORT=" + envOr("E2E_NODE_KWOK_PORT", "21247"),
	}
}

// hostState is what the real node may change on the host, as "kind: fact"
// lines: the sysctls the kubelet and the CNI plugins set, the iptables
// rules, the network links, the mounts, the network namespaces, the
// cgroups the node makes, the host paths its programs create, and the
// processes running against its directory.
func hostState() []string {
	var facts []string
	add := func(kind string, lines ...string) {
		for _, l := range lines {
			if l = strings.TrimSpace(l); l != "" {
				facts = append(facts, kind+": "+l)
			}
		}
	}
	for _, s := range []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops", "net/ipv4/ip_forward", "net/ipv4/conf/all/route_localnet"} {
		b, err := os.ReadFile("/proc/sys/" + s)
		add("sysctl", fmt.Sprintf("%s=%s (%v)", s, strings.TrimSpace(string(b)), err))
	}
	for _, l := range output("iptables-save") {
		if !strings.HasPrefix(l, "#") {
			add("iptables", regexp.MustCompile(`\[\d+:\d+\]`).ReplaceAllString(l, ""))
		}
	}
	for _, l := range output("ip", "-o", "link", "show") {
		if f := strings.Fields(l); len(f) > 1 {
			add("link", strings.TrimSuffix(f[1], ":"))
		}
	}
	add("mount", output("findmnt", "-rn", "-o", "TARGET")...)
	add("netns", output("ip", "netns", "list")...)
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/dbc-*")
	add("cgroup", cgroups...)
	for _, p := range []string{"/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/var/lib/cni",
		"/run/containerd", "/run/netns", "/var/run/cdi", "/etc/cdi", "/opt/containerd", "/run/dbc-real-node"} {
		if _, err := os.Stat(p); err == nil {
			add("path", p)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(localDir+"/")) {
			add("process", strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	sort.Strings(facts)
	return facts
}

func output(name string, args ...string) []string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return []string{fmt.Sprintf("%s %v: %v", name, args, err)}
	}
	return strings.Split(string(out), "\n")
}

// diffStates lists the facts that appeared (+) or disappeared (-).
func diffStates(before, after []string) string {
	in := func(list []string) map[string]bool {
		m := map[string]bool{}
		for _, l := range list {
			m[l] = true
		}
		return m
	}
	b, a := in(before), in(after)
	var out []string
	for _, l := range before {
		if !a[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range after {
		if !b[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[e2e-node %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(cmd *exec.Cmd, env ...string) ([]byte, error) {
	cmd.Env = append(os.Environ(), env...)
	return cmd.CombinedOutput()
}

func kubectlRun(stdin string, args ...string) ([]byte, error) {
	cmd := exec.Command(kubectlBin, append([]string{"--kubeconfig", filepath.Join(localDir, "kubeconfig")}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	return cmd.CombinedOutput()
}

func kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := kubectlRun("", args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func kubectlIn(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectlRun(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func getJSON(t testing.TB, into any, args ...string) {
	t.Helper()
	out := kubectl(t, append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), into); err != nil {
		t.Fatalf("decoding kubectl %v: %v", args, err)
	}
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
	ns := "node-" + strings.Trim(name, "-") + "-" + hex.EncodeToString(b)
	kubectl(t, "create", "namespace", ns)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := kubectlRun("", "-n", ns, "get", "db,statefulset,pod,pvc,events", "-o", "wide")
			t.Logf("namespace %s when the test failed:\n%s", ns, out)
		}
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
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, why)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func getDB(t testing.TB, ns, name string) *dbv1alpha1.Database {
	t.Helper()
	db := &dbv1alpha1.Database{}
	getJSON(t, db, "-n", ns, "get", "database", name)
	return db
}

func condition(db *dbv1alpha1.Database, condType string) (status, reason, message string) {
	for _, c := range db.Status.Conditions {
		if c.Type == condType {
			return string(c.Status), c.Reason, c.Message
		}
	}
	return "", "", ""
}

// isRunning tells whether a Database is Running with every replica ready
// and its status up to date, and if not, why.
func isRunning(db *dbv1alpha1.Database) (bool, string) {
	want := int32(1)
	if db.Spec.Replicas != nil {
		want = *db.Spec.Replicas
	}
	ready, _, msg := condition(db, "Ready")
	ok := db.Status.Phase == dbv1alpha1.PhaseRunning && db.Status.ReadyReplicas == want &&
		ready == "True" && db.Status.ObservedGeneration == db.Generation
	return ok, fmt.Sprintf("phase=%s ready=%d/%d Ready=%s (%s)", db.Status.Phase, db.Status.ReadyReplicas, want, ready, msg)
}

func waitRunning(t testing.TB, ns, name string) *dbv1alpha1.Database {
	t.Helper()
	var db *dbv1alpha1.Database
	eventually(t, converge, "Database "+ns+"/"+name+" to be Running", func() (bool, string) {
		db = getDB(t, ns, name)
		return isRunning(db)
	})
	return db
}

// dbYAML is a Database on one of the node's images, with requests small
// enough for a 2-core machine.
func dbYAML(name, engine, version, image string, replicas int) string {
	return fmt.Sprintf(`apiVersion: dbcontroller.io/v1alpha1
kind: Database
metadata:
  name: %s
spec:
  engine: %s
  version: %q
  image: %s
  replicas: %d
  resources:
    requests: {cpu: 50m, memory: 128Mi}
    limits: {memory: 512Mi}
`, name, engine, version, image, replicas)
}

func secretValue(t testing.TB, ns, db, key string) string {
	t.Helper()
	out := kubectl(t, "-n", ns, "get", "secret", db+"-credentials", "-o", "jsonpath={.data."+key+"}")
	b, err := base64.StdEncoding.DecodeString(out)
	if err != nil || len(b) == 0 {
		t.Fatalf("key %s of the Secret %s-credentials: %q %v", key, db, out, err)
	}
	return string(b)
}

// runClient runs script with sh in a pod of image that gets every key of
// the Database's credentials Secret as an environment variable of the
// same name in capitals (URI, USERNAME, PASSWORD, HOST, PORT, DATABASE,
// and the extra keys asked for, with "-" as "_": RO_URI), straight from
// the Secret, and returns its output. The test fails if the script fails.
func runClient(t testing.TB, ns, db, image, script string, extraKeys ...string) string {
	t.Helper()
	out, err := tryClient(t, ns, db, image, script, extraKeys...)
	if err != nil {
		t.Fatalf("client of %s/%s: %v\n%s", ns, db, err, out)
	}
	return out
}

// clientPod is a pod that runs script with sh in image, once, with the keys
// of db's credentials Secret as environment variables (in capitals, "-" as
// "_").
func clientPod(name, db, image, script string, keys ...string) string {
	var env strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&env, "    - name: %s\n      valueFrom: {secretKeyRef: {name: %s-credentials, key: %s}}\n", strings.ToUpper(strings.ReplaceAll(k, "-", "_")), db, k)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  containers:
  - name: client
    image: %s
    command: ["sh", "-c", %q]
    env:
%s`, name, image, script, env.String())
}

func tryClient(t testing.TB, ns, db, image, script string, extraKeys ...string) (string, error) {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "client-" + hex.EncodeToString(b)
	kubectlIn(t, clientPod(name, db, image, script, append([]string{"uri", "username", "password", "host", "port", "database"}, extraKeys...)...),
		"-n", ns, "create", "-f", "-")
	var phase string
	eventually(t, converge, "client pod "+name, func() (bool, string) {
		phase = strings.TrimSpace(kubectl(t, "-n", ns, "get", "pod", name, "-o", "jsonpath={.status.phase}"))
		return phase == "Succeeded" || phase == "Failed", "phase " + phase
	})
	logs := kubectl(t, "-n", ns, "logs", name)
	_, _ = kubectlRun("", "-n", ns, "delete", "pod", name, "--wait=false")
	if phase != "Succeeded" {
		return logs, fmt.Errorf("client pod %s %s", name, phase)
	}
	return logs, nil
}

// podUID is the uid of the Database's first pod, "" if there is none.
func podUID(t testing.TB, ns, db string) string {
	t.Helper()
	out, err := kubectlRun("", "-n", ns, "get", "pod", db+"-0", "-o", "jsonpath={.metadata.uid}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

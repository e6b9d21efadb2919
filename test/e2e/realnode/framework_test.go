//go:build e2e

// Package realnode runs the controller against a local control plane with a
// real node (hack/local-up.sh with LOCAL_REAL_NODE=1: containerd, runc, a
// kubelet, kube-proxy and CoreDNS), so that its StatefulSets run real
// PostgreSQL, MariaDB and MySQL servers from the images hack/images builds. It needs
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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// The images hack/images/build.sh makes (hack/images/names.sh).
const (
	postgresImage = "localhost/dbc/postgresql:15"
	mariadbImage  = "localhost/dbc/mariadb:10.11"
	mysqlImage    = "localhost/dbc/mysql:9.7"
	// slowInitImage is postgresImage with a first-init script that takes
	// longer than the liveness budget (hack/images/postgresql/slow-init.sh).
	slowInitImage = "localhost/dbc/postgresql-slowinit:15"
	// controllerImage holds the controller's binary alone.
	controllerImage = "localhost/dbc/controller:dev"
)

// How long a Database may take to converge on the real node: the image is
// already there, but a server initialises its data directory first.
const converge = 3 * time.Minute

var (
	root     string
	localDir string
	// metricsAddress is where the suite's controller serves /metrics.
	metricsAddress = "127.0.0.1:" + e2eutil.EnvOr("E2E_NODE_METRICS_PORT", "21080")
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
	localDir = e2eutil.EnvOr("E2E_NODE_LOCAL_DIR", filepath.Join(root, "_output", "e2e-node"))
	e2eutil.Setup(e2eutil.Config{
		LogPrefix:       "e2e-node",
		Kubectl:         filepath.Join(root, "_output", "bin", "kubectl"),
		Kubeconfig:      filepath.Join(localDir, "kubeconfig"),
		NamespacePrefix: "node-",
		DumpOnFailure:   "db,statefulset,pod,pvc,events",
		Poll:            500 * time.Millisecond,
		ReadyMessage:    true,
		// Real servers write why they crash.
		DumpLogsOnFailure: true,
		EventsOnFailure:   8,
		// A server process killed (the kernel's OOM killer, say) and the
		// crash recovery that follows, in place; a PANIC; MySQL's and
		// MariaDB's errors and fatal signals.
		ServerLogOnFailure: regexp.MustCompile(`terminated by signal|all server processes terminated|not properly shut down|PANIC:|out of memory|\[ERROR\]|got signal`),
	})
	if err := takeParallelFlag(); err != nil {
		e2eutil.Logf("-parallel: %v", err)
		return 1
	}
	if os.Geteuid() != 0 {
		e2eutil.Logf("the real-node suite needs root (containerd, runc, network namespaces); run make test as root")
		return 1
	}
	controllerBin := filepath.Join(root, "_output", "e2e-node-controller")
	e2eutil.Logf("building the controller")
	if out, err := e2eutil.Run(exec.Command(filepath.Join(root, "hack", "build.sh")), "OUT="+controllerBin); err != nil {
		e2eutil.Logf("build failed: %v\n%s", err, out)
		return 1
	}

	before := hostState()
	e2eutil.Logf("starting the local control plane with a real node in %s", localDir)
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
			e2eutil.Logf("local-down: %v\n%s", err, out)
			code = 1
		}
		e2eutil.Logf("local-down took %s", time.Since(stop).Round(100*time.Millisecond))
		// Stopping must leave the host as it was.
		if diff := diffStates(before, hostState()); diff != "" {
			e2eutil.Logf("FAIL: stopping the real node left the host changed:\n%s", diff)
			code = 1
		} else {
			e2eutil.Logf("the host is as it was before the node started (%d facts compared)", len(before))
		}
	}()
	if upErr != nil {
		e2eutil.Logf("local control plane failed to start: %v", upErr)
		return 1
	}
	e2eutil.Logf("local control plane with a real node is up after %s", time.Since(start).Round(100*time.Millisecond))

	if out, err := e2eutil.KubectlRun("", "apply", "-k", filepath.Join(root, "artifacts", "crd")); err != nil {
		e2eutil.Logf("installing the CRDs: %v\n%s", err, out)
		return 1
	}
	if err := e2eutil.WaitEstablished(time.Minute, "databases.dbcontroller.io", "databasebackups.dbcontroller.io"); err != nil {
		e2eutil.Logf("%v", err)
		return 1
	}
	logPath := filepath.Join(root, "_output", "e2e-node-controller.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		e2eutil.Logf("%v", err)
		return 1
	}
	defer logFile.Close()
	controller.start = func() (*exec.Cmd, error) {
		ctrl := exec.Command(controllerBin, "--kubeconfig="+filepath.Join(localDir, "kubeconfig"),
			"--metrics-bind-address="+metricsAddress, "--health-probe-bind-address=0", "--tools-image="+controllerImage, "--tls-trust-period=2m", "-v=2")
		ctrl.Stdout, ctrl.Stderr = logFile, logFile
		if err := ctrl.Start(); err != nil {
			return ctrl, err
		}
		// Recorded where local-down.sh stops what it finds (a pid file
		// named as the binary, whose arguments name LOCAL_DIR): a suite
		// interrupted before its deferred stop leaves no controller
		// running past the next local-down, or the next suite's local-up.
		pidFile := filepath.Join(localDir, "pids", filepath.Base(controllerBin)+".pid")
		return ctrl, os.WriteFile(pidFile, []byte(strconv.Itoa(ctrl.Process.Pid)+"\n"), 0o644)
	}
	if controller.cmd, err = controller.start(); err != nil {
		e2eutil.Logf("starting the controller: %v", err)
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
	e2eutil.Logf("real-node tests took %s (controller log: %s)", time.Since(suiteStart).Round(100*time.Millisecond), logPath)
	// Local volumes are never reused: how many the tests took tells how
	// close the suite is to LOCAL_REAL_NODE_VOLUMES.
	if out, err := e2eutil.KubectlRun("", "get", "pv", "-o", "jsonpath={range .items[*]}{.status.phase}{\"\\n\"}{end}"); err == nil {
		used := strings.Count(string(out), "Bound") + strings.Count(string(out), "Released")
		e2eutil.Logf("local volumes taken: %d of %d", used, strings.Count(string(out), "\n"))
	}
	return code
}

// localEnv gives the suite's control plane a directory and ports of its own,
// apart from the kwok suite's and from `make run-local`'s.
func localEnv() []string {
	return []string{
		"LOCAL_DIR=" + localDir,
		"LOCAL_REAL_NODE=1",
		// Local volumes are never reused once released (reclaim policy
		// Retain): one per Database pod, backup volume and claim of the
		// suite. CI ran out of the 40 it had once the MySQL replication
		// tests came, and took 79 of 80 once the drain and reseed tests
		// came; the suite logs how many it took.
		"LOCAL_REAL_NODE_VOLUMES=" + e2eutil.EnvOr("E2E_NODE_VOLUMES", "160"),
		"SKIP_BUILD=" + e2eutil.EnvOr("E2E_NODE_SKIP_BUILD", "1"),
		"LOCAL_APISERVER_PORT=" + e2eutil.EnvOr("E2E_NODE_APISERVER_PORT", "17443"),
		"LOCAL_ETCD_PORT=" + e2eutil.EnvOr("E2E_NODE_ETCD_PORT", "13379"),
		"LOCAL_ETCD_PEER_PORT=" + e2eutil.EnvOr("E2E_NODE_ETCD_PEER_PORT", "13380"),
		"LOCAL_CONTROLLER_MANAGER_PORT=" + e2eutil.EnvOr("E2E_NODE_KCM_PORT", "21257"),
		"LOCAL_SCHEDULER_PORT=" + e2eutil.EnvOr("E2E_NODE_SCHEDULER_PORT", "21259"),
		"LOCAL_KWOK_PORT=" + e2eutil.EnvOr("E2E_NODE_KWOK_PORT", "21247"),
		"LOCAL_OBJECTSTORE_PORT=" + e2eutil.EnvOr("E2E_NODE_OBJECTSTORE_PORT", "21070"),
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
	add("nft", output("nft", "list", "tables")...)
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

// mysqlYAML is dbYAML for a mysql Database, with a 1Gi memory limit:
// MySQL 9.7 with its default settings holds about 490 MB at its start, and
// the 512Mi limit of the other tests' Databases got it OOM-killed in CI.
func mysqlYAML(name, version, image string, replicas int) string {
	return strings.Replace(dbYAML(name, "mysql", version, image, replicas), "memory: 512Mi", "memory: 1Gi", 1)
}

func secretValue(t testing.TB, ns, db, key string) string {
	t.Helper()
	out := e2eutil.Kubectl(t, "-n", ns, "get", "secret", db+"-credentials", "-o", "jsonpath={.data."+key+"}")
	b, err := base64.StdEncoding.DecodeString(out)
	if err != nil || len(b) == 0 {
		t.Fatalf("key %s of the Secret %s-credentials: %q %v", key, db, out, err)
	}
	return string(b)
}

// runClient runs script with sh in a client pod of image (clientPodOf),
// with every key of the Database's credentials Secret as an environment
// variable of the same name in capitals (URI, USERNAME, PASSWORD, HOST,
// PORT, DATABASE, and the extra keys asked for, with "-" as "_": RO_URI),
// read from the Secret as the script starts, and returns its output. The
// test fails if the script fails.
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
		fmt.Fprintf(&env, "    - name: %s\n      valueFrom: {secretKeyRef: {name: %s-credentials, key: %s}}\n", envName(k), db, k)
	}
	return podManifest(name, image, script, env.String(), "")
}

// envName is the environment variable a client gets a Secret's key as.
func envName(key string) string {
	return strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

// podManifest is a pod that runs script with sh in image, once, with env
// (YAML list items of the container's environment) and rest (YAML of the
// container's fields after env, and of the pod's after its containers).
func podManifest(name, image, script, env, rest string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  # The resolver asks again every 2 s, five times (its default: every
  # 5 s, twice). A client reaches the Database by its Service's name, and
  # one lost answer on the busy node failed a one-shot client ("Unknown
  # MySQL server host ... (-3)") in a run where nothing else failed.
  dnsConfig:
    options:
    - {name: timeout, value: "2"}
    - {name: attempts, value: "5"}
  containers:
  - name: client
    image: %s
    command: ["sh", "-c", %q]
    env:
%s%s`, name, image, script, env, rest)
}

// tryClient is runClient that returns the script's failure rather than
// failing the test. The script runs in kubectl exec, its environment
// given on its standard input (not in its arguments, which the API
// server's and the kubelet's logs may hold), which the script itself then
// finds at its end, as a pod's container finds its own.
func tryClient(t testing.TB, ns, db, image, script string, extraKeys ...string) (string, error) {
	t.Helper()
	var secret corev1.Secret
	if err := e2eutil.TryGetJSON(&secret, "-n", ns, "get", "secret", db+"-credentials"); err != nil {
		return "", fmt.Errorf("the credentials Secret: %v", err)
	}
	var env strings.Builder
	for _, k := range append([]string{"uri", "username", "password", "host", "port", "database"}, extraKeys...) {
		v, ok := secret.Data[k]
		if !ok {
			return "", fmt.Errorf("the credentials Secret has no key %s", k)
		}
		fmt.Fprintf(&env, "export %s='%s'\n", envName(k), strings.ReplaceAll(string(v), "'", `'\''`))
	}
	pod := clientPodOf(t, image)
	out, err := e2eutil.KubectlRun(env.String(), "-n", clientsNamespace, "exec", "-i", pod, "--", "sh", "-c", clientScript+script)
	if err != nil {
		return string(out), fmt.Errorf("the script in the client pod %s: %v", pod, err)
	}
	return string(out), nil
}

// clientScript begins each script that tryClient runs: it reads the
// environment from standard input, and moves to a directory of the
// script's own, removed when it ends, as scripts of other tests run in the
// same pod at once.
const clientScript = `eval "$(cat)"
dir=$(mktemp -d) && cd "$dir" || exit 1
trap 'cd / && rm -rf "$dir"' EXIT
`

// podHost is the name of pod, a pod of the Database db in ns, that the
// clients resolve from any namespace: through the Database's headless
// Service.
func podHost(ns, db, pod string) string {
	return fmt.Sprintf("%s.%s-headless.%s.svc", pod, db, ns)
}

// clientsNamespace holds the suite's client pods (clientPodOf).
const clientsNamespace = "node-clients"

// clientPods are the pods the clients' scripts run in (tryClient), one per
// image for the whole suite, in clientsNamespace, made by the first script
// and left to the node's end; before, each test's namespace made its own
// of each image it used. A pod for each script cost about 3 CPU-seconds of
// this machine (its sandbox, network, container, and their deletion); an
// exec into a pod that runs, about 0.3 (measured on make run-local's real
// node, ten of each). So the scripts name every server by a name that
// resolves from any namespace (the Secret's host; podHost for one pod) or
// by its address, and keep their files in a directory of their own
// (clientScript). Its main process never ends, so an exec is never cut
// short by its container's end (most likely why a writer's stop saw exit
// 137: its writer ends on the file the exec makes).
var clientPods = struct {
	sync.Mutex
	namespace sync.Once
	byImage   map[string]*clientPodName
}{byImage: map[string]*clientPodName{}}

type clientPodName struct {
	sync.Mutex
	name string
}

// clientPodOf is the name of the suite's client pod of image, running:
// made, or made again if it is gone (a pod is not restarted once its
// process ended).
func clientPodOf(t testing.TB, image string) string {
	t.Helper()
	clientPods.namespace.Do(func() {
		if out, err := e2eutil.KubectlRun("", "create", "namespace", clientsNamespace); err != nil && !strings.Contains(string(out), "AlreadyExists") {
			t.Fatalf("creating the namespace of the client pods: %v\n%s", err, out)
		}
	})
	clientPods.Lock()
	p := clientPods.byImage[image]
	if p == nil {
		p = &clientPodName{}
		clientPods.byImage[image] = p
	}
	clientPods.Unlock()
	p.Lock()
	defer p.Unlock()
	ns := clientsNamespace
	if p.name != "" {
		var pod corev1.Pod
		if err := e2eutil.TryGetJSON(&pod, "-n", ns, "get", "pod", p.name); err == nil && pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
			return p.name
		}
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "client-" + hex.EncodeToString(b)
	// sh waits for sleep, and ends at once on the SIGTERM of the pod's
	// deletion.
	e2eutil.KubectlIn(t, podManifest(name, image, "trap 'exit 0' TERM; sleep infinity & wait", "", "  terminationGracePeriodSeconds: 1\n"), "-n", ns, "create", "-f", "-")
	e2eutil.Eventually(t, converge, "client pod "+name+" running", func() (bool, string) {
		var pod corev1.Pod
		e2eutil.GetJSON(t, &pod, "-n", ns, "get", "pod", name)
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			t.Fatalf("client pod %s ended: %s%s", name, pod.Status.Phase, whyFailed(&pod))
		}
		return pod.Status.Phase == corev1.PodRunning, "phase " + string(pod.Status.Phase)
	})
	p.name = name
	return name
}

// tryPod runs the pod that manifest makes of a new name, once, and returns
// its log, and why it failed.
func tryPod(t testing.TB, ns string, manifest func(name string) string) (string, error) {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "client-" + hex.EncodeToString(b)
	e2eutil.KubectlIn(t, manifest(name), "-n", ns, "create", "-f", "-")
	var pod corev1.Pod
	e2eutil.Eventually(t, converge, "client pod "+name, func() (bool, string) {
		pod = corev1.Pod{}
		e2eutil.GetJSON(t, &pod, "-n", ns, "get", "pod", name)
		return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed, "phase " + string(pod.Status.Phase)
	})
	logs := e2eutil.Kubectl(t, "-n", ns, "logs", name)
	_, _ = e2eutil.KubectlRun("", "-n", ns, "delete", "pod", name, "--wait=false")
	if pod.Status.Phase != corev1.PodSucceeded {
		return logs, fmt.Errorf("client pod %s %s%s", name, pod.Status.Phase, whyFailed(&pod))
	}
	return logs, nil
}

// whyFailed is what the kubelet said of a pod that failed: the pod's
// reason and message (an eviction, a refused admission) and how its
// container ended.
func whyFailed(pod *corev1.Pod) string {
	var why strings.Builder
	if pod.Status.Reason != "" || pod.Status.Message != "" {
		fmt.Fprintf(&why, ": %s %s", pod.Status.Reason, pod.Status.Message)
	}
	for _, c := range pod.Status.ContainerStatuses {
		if term := c.State.Terminated; term != nil {
			fmt.Fprintf(&why, "; container %s: %s, exit code %d, ran %s", c.Name, term.Reason, term.ExitCode,
				term.FinishedAt.Sub(term.StartedAt.Time))
		}
	}
	return why.String()
}

// podUID is the uid of the Database's first pod, "" if there is none.
func podUID(t testing.TB, ns, db string) string {
	t.Helper()
	out, err := e2eutil.KubectlRun("", "-n", ns, "get", "pod", db+"-0", "-o", "jsonpath={.metadata.uid}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// waitPodMadeAgain waits until the pod named pod, deleted while its UID
// was uid, exists again under another UID and is ready: its new server
// serves.
func waitPodMadeAgain(t testing.TB, ns, pod, uid string) {
	t.Helper()
	e2eutil.Eventually(t, converge, "a new pod "+pod+", ready", func() (bool, string) {
		var p corev1.Pod
		if err := e2eutil.TryGetJSON(&p, "-n", ns, "get", "pod", pod); err != nil {
			return false, err.Error()
		}
		ready := slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		})
		return string(p.UID) != uid && ready, fmt.Sprintf("uid %s, ready %t", p.UID, ready)
	})
}

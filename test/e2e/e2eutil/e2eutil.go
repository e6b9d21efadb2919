//go:build e2e

// Package e2eutil holds the kubectl and polling helpers that the end-to-end
// suites share: test/e2e on kwok nodes and test/e2e/realnode on a real node.
// Each suite calls Setup from its TestMain, before anything else here, with
// what tells it from the other: its kubectl, its kubeconfig, how it names
// and logs things and how often it polls.
package e2eutil

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// Config is what differs between the suites that use these helpers.
type Config struct {
	// LogPrefix starts every line Logf writes, before the time: "e2e".
	LogPrefix string
	// Kubectl is the kubectl binary.
	Kubectl string
	// Kubeconfig is the admin kubeconfig kubectl runs with.
	Kubeconfig string
	// NamespacePrefix starts the name of every namespace NewNamespace
	// creates: "e2e-".
	NamespacePrefix string
	// DumpOnFailure lists the kinds that NewNamespace shows, with
	// kubectl get -o wide, from the namespace of a test that failed:
	// "pod,events". Nothing is shown if it is empty.
	DumpOnFailure string
	// Poll is how long Eventually waits between two checks.
	Poll time.Duration
	// ReadyMessage adds the message of the Ready condition to the
	// explanation IsRunning gives.
	ReadyMessage bool
	// DumpLogsOnFailure adds, to what NewNamespace shows of a failed
	// test's namespace, the last lines of each container that restarted,
	// from before its last restart: the words of a crash loop, which the
	// namespace's deletion would lose.
	DumpLogsOnFailure bool
	// EventsOnFailure is how many of the last events of a failed test's
	// Databases and backups NewNamespace logs, a line each, last: CI's
	// summary keeps a failed test's last lines (hack/testsummary), and
	// the events say what the controller did (a failover, a restart)
	// where the dump's lines stay in the log.
	EventsOnFailure int
	// ServerLogOnFailure, when set, picks the lines of the servers' logs
	// worth a failed test's summary (a server process killed, a crash
	// recovery): NewNamespace logs the last such line of each container
	// of the namespace's pods, before the events, a line each, at most
	// serverLogLines. A server that crashed and recovered in place
	// restarts no container, and no event says so.
	ServerLogOnFailure *regexp.Regexp
}

// serverLogLines is how many lines ServerLogOnFailure adds to a failed
// test's messages at most.
const serverLogLines = 4

// suite is the Config of the suite running, set by Setup.
var suite Config

// Setup sets the Config of the suite running. TestMain calls it once,
// before the tests start.
func Setup(c Config) {
	suite = c
}

// EnvOr is the environment variable k, or def if it is empty.
func EnvOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Logf writes a line to standard error, with the suite's prefix and the time.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s %s] %s\n", suite.LogPrefix, time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// Run runs cmd with env added to this process's environment and returns
// its standard output and error together.
func Run(cmd *exec.Cmd, env ...string) ([]byte, error) {
	cmd.Env = append(os.Environ(), env...)
	return cmd.CombinedOutput()
}

// KubectlRun runs kubectl as the cluster admin, with stdin as its standard
// input unless it is empty, and returns its output and error. The reads
// the tests poll with, and the commands they run in pods (kubectl exec),
// are served in this process instead, with the same output (readargs.go,
// exec.go).
func KubectlRun(stdin string, args ...string) ([]byte, error) {
	if rc, ok := parseRead(args); ok && stdin == "" {
		if out, handled, err := readInProcess(rc); handled {
			return out, err
		}
	}
	if ec, ok := parseExec(args); ok {
		if out, handled, err := execInProcess(ec, stdin); handled {
			return out, err
		}
	}
	return KubectlExec(stdin, args...)
}

// KubectlExec is KubectlRun that always runs kubectl, never serving a
// command in process.
func KubectlExec(stdin string, args ...string) ([]byte, error) {
	cmd := exec.Command(suite.Kubectl, append([]string{"--kubeconfig", suite.Kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	return cmd.CombinedOutput()
}

// DifferenceFromKubectl runs args as KubectlRun does, which may serve
// them in this process, and as kubectl itself (KubectlExec), and says how
// the two differ: in their output, byte for byte, or in their success or
// exit status (a command served in process fails with kubectl's "exit
// status N" and words after it); "" when they do not.
func DifferenceFromKubectl(stdin string, args ...string) string {
	served, servedErr := KubectlRun(stdin, args...)
	kubectl, kubectlErr := KubectlExec(stdin, args...)
	sameExit := (servedErr == nil) == (kubectlErr == nil) &&
		(kubectlErr == nil || strings.HasPrefix(servedErr.Error(), kubectlErr.Error()))
	if string(served) == string(kubectl) && sameExit {
		return ""
	}
	return fmt.Sprintf("kubectl %s:\nserved in process (error %v):\n%s\nkubectl (error %v):\n%s",
		strings.Join(args, " "), servedErr, served, kubectlErr, kubectl)
}

// WaitEstablished waits until each of the CRDs is Established, asking
// every half second for at most timeout. Not kubectl wait: it fails at once,
// rather than waiting, on a CRD whose status has no conditions yet (seen
// on a fresh machine's CI run: ".status.conditions accessor error: <nil>
// is of the type <nil>").
func WaitEstablished(timeout time.Duration, crds ...string) error {
	deadline := time.Now().Add(timeout)
	for _, crd := range crds {
		for {
			out, err := KubectlRun("", "get", "crd", crd, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
			if err == nil && strings.TrimSpace(string(out)) == "True" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not Established after %s: %v %s", crd, timeout, err, out)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	return nil
}

// Kubectl runs kubectl as the cluster admin and fails the test on error.
func Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := KubectlRun("", args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// KubectlIn is Kubectl with standard input.
func KubectlIn(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := KubectlRun(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// GetJSON runs kubectl with args and "-o json" and decodes its output into
// into, failing the test on error.
func GetJSON(t testing.TB, into any, args ...string) {
	t.Helper()
	if err := TryGetJSON(into, args...); err != nil {
		t.Fatal(err)
	}
}

// TryGetJSON is GetJSON that returns its error: for an object that may
// not exist yet, inside Eventually.
func TryGetJSON(into any, args ...string) error {
	out, err := KubectlRun("", append(args, "-o", "json")...)
	if err != nil {
		return fmt.Errorf("kubectl %v: %w: %s", args, err, strings.TrimSpace(string(out)))
	}
	if err := json.Unmarshal(out, into); err != nil {
		return fmt.Errorf("decoding kubectl %v: %w", args, err)
	}
	return nil
}

// NewNamespace creates a namespace for one test and deletes it afterwards,
// unless E2E_KEEP_NAMESPACES is set.
func NewNamespace(t *testing.T) string {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := strings.ToLower(regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "-"))
	if len(name) > 40 {
		name = name[:40]
	}
	ns := suite.NamespacePrefix + strings.Trim(name, "-") + "-" + hex.EncodeToString(b)
	Kubectl(t, "create", "namespace", ns)
	t.Cleanup(func() {
		if t.Failed() && suite.DumpOnFailure != "" {
			out, _ := KubectlRun("", "-n", ns, "get", suite.DumpOnFailure, "-o", "wide")
			t.Logf("namespace %s when the test failed:\n%s", ns, out)
			if suite.DumpLogsOnFailure {
				t.Logf("%s", restartedContainerLogs(ns))
			}
		}
		if t.Failed() && suite.ServerLogOnFailure != nil {
			for _, l := range serverLog(ns, suite.ServerLogOnFailure) {
				t.Logf("log: %s", l)
			}
		}
		if t.Failed() {
			for _, e := range lastEvents(ns, suite.EventsOnFailure) {
				t.Logf("event: %s", e)
			}
		}
		if os.Getenv("E2E_KEEP_NAMESPACES") == "" {
			_, _ = KubectlRun("", "delete", "namespace", ns, "--wait=false")
		}
	})
	return ns
}

// Eventually polls cond until it returns true, failing after timeout with
// cond's last explanation.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
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
		time.Sleep(suite.Poll)
	}
}

// GetDB reads a Database through kubectl.
func GetDB(t testing.TB, ns, name string) *dbv1alpha1.Database {
	t.Helper()
	db := &dbv1alpha1.Database{}
	GetJSON(t, db, "-n", ns, "get", "database", name)
	return db
}

// GetBackup reads a DatabaseBackup through kubectl.
func GetBackup(t testing.TB, ns, name string) *dbv1alpha1.DatabaseBackup {
	t.Helper()
	b := &dbv1alpha1.DatabaseBackup{}
	GetJSON(t, b, "-n", ns, "get", "databasebackup", name)
	return b
}

// Condition is the status, reason and message of a Database's condition,
// all empty if it has none of that type.
func Condition(db *dbv1alpha1.Database, condType string) (status, reason, message string) {
	for _, c := range db.Status.Conditions {
		if c.Type == condType {
			return string(c.Status), c.Reason, c.Message
		}
	}
	return "", "", ""
}

// IsRunning tells whether a Database is Running with every replica ready
// and its status up to date, and if not, why.
func IsRunning(db *dbv1alpha1.Database) (bool, string) {
	want := int32(1)
	if db.Spec.Replicas != nil {
		want = *db.Spec.Replicas
	}
	ready, _, msg := Condition(db, "Ready")
	ok := db.Status.Phase == dbv1alpha1.PhaseRunning && db.Status.ReadyReplicas == want &&
		ready == "True" && db.Status.ObservedGeneration == db.Generation
	why := fmt.Sprintf("phase=%s ready=%d/%d Ready=%s", db.Status.Phase, db.Status.ReadyReplicas, want, ready)
	if suite.ReadyMessage {
		why += fmt.Sprintf(" (%s)", msg)
	}
	return ok, why
}

// WaitRunning waits until the Database is Running with every replica ready.
func WaitRunning(t testing.TB, ns, name string, timeout time.Duration) *dbv1alpha1.Database {
	t.Helper()
	var db *dbv1alpha1.Database
	Eventually(t, timeout, "Database "+ns+"/"+name+" to be Running", func() (bool, string) {
		db = GetDB(t, ns, name)
		return IsRunning(db)
	})
	return db
}

// lastEvents is the last n events of ns's Databases and DatabaseBackups
// (what the controller did and why; the pods' own are in the dump),
// oldest first, a line each: when, the object, the reason and the message.
func lastEvents(ns string, n int) []string {
	if n <= 0 {
		return nil
	}
	var events corev1.EventList
	if err := TryGetJSON(&events, "-n", ns, "get", "events"); err != nil {
		return []string{err.Error()}
	}
	at := func(e corev1.Event) time.Time {
		switch {
		case !e.LastTimestamp.IsZero():
			return e.LastTimestamp.Time
		case !e.EventTime.IsZero():
			return e.EventTime.Time
		}
		return e.CreationTimestamp.Time
	}
	events.Items = slices.DeleteFunc(events.Items, func(e corev1.Event) bool {
		return !strings.HasPrefix(e.InvolvedObject.APIVersion, dbv1alpha1.SchemeGroupVersion.Group+"/")
	})
	slices.SortStableFunc(events.Items, func(a, b corev1.Event) int { return at(a).Compare(at(b)) })
	var lines []string
	for _, e := range events.Items[max(0, len(events.Items)-n):] {
		lines = append(lines, fmt.Sprintf("%s %s/%s %s: %s", at(e).Format("15:04:05"), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message))
	}
	return lines
}

// serverLog is, for each container of ns's pods (its run before its
// last restart, then its current one), the last line of its last 500
// that pick matches, named by pod and container: the last serverLogLines
// of them.
func serverLog(ns string, pick *regexp.Regexp) []string {
	var pods corev1.PodList
	if err := TryGetJSON(&pods, "-n", ns, "get", "pods"); err != nil {
		return []string{err.Error()}
	}
	var lines []string
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			type run struct{ flag, note string }
			runs := []run{{"--previous=false", ""}}
			if c.RestartCount > 0 {
				runs = []run{{"--previous", " (before its restart)"}, runs[0]}
			}
			for _, r := range runs {
				logs, err := KubectlRun("", "-n", ns, "logs", p.Name, "-c", c.Name, r.flag, "--tail=500")
				if err != nil {
					continue
				}
				var last string
				for _, l := range strings.Split(string(logs), "\n") {
					if pick.MatchString(l) {
						last = l
					}
				}
				if last != "" {
					lines = append(lines, fmt.Sprintf("%s/%s%s: %s", p.Name, c.Name, r.note, strings.TrimSpace(last)))
				}
			}
		}
	}
	return lines[max(0, len(lines)-serverLogLines):]
}

// restartedContainerLogs is the last 40 lines each container of ns that
// restarted wrote before its last restart, and each init container's.
func restartedContainerLogs(ns string) string {
	var pods corev1.PodList
	if err := TryGetJSON(&pods, "-n", ns, "get", "pods"); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		for _, c := range p.Status.InitContainerStatuses {
			logs, _ := KubectlRun("", "-n", ns, "logs", p.Name, "-c", c.Name, "--tail=40")
			fmt.Fprintf(&b, "--- %s init container %s:\n%s\n", p.Name, c.Name, logs)
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount == 0 {
				continue
			}
			logs, _ := KubectlRun("", "-n", ns, "logs", p.Name, "-c", c.Name, "--previous", "--tail=40")
			fmt.Fprintf(&b, "--- %s container %s before its restart %d:\n%s\n", p.Name, c.Name, c.RestartCount, logs)
		}
	}
	return b.String()
}

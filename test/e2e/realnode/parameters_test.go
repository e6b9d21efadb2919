//go:build e2e

package realnode

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// uidWatch watches the UIDs of a Database's pods (e2eutil.WatchPods),
// and keeps, for each pod name, every UID it saw, in order, with when it
// first saw it.
type uidWatch struct {
	stop func()
	mu   sync.Mutex
	seen map[string][]sightedUID
}

type sightedUID struct {
	uid string
	at  time.Time
}

func watchUIDs(t testing.TB, ns, db string) *uidWatch {
	t.Helper()
	s := &uidWatch{seen: map[string][]sightedUID{}}
	stop, err := e2eutil.WatchPods(ns, "app.kubernetes.io/instance="+db, func(pods map[string]*corev1.Pod) {
		now := time.Now()
		s.mu.Lock()
		defer s.mu.Unlock()
		for name, pod := range pods {
			if l := s.seen[name]; len(l) == 0 || l[len(l)-1].uid != string(pod.UID) {
				s.seen[name] = append(l, sightedUID{string(pod.UID), now})
			}
		}
	})
	if err != nil {
		t.Fatalf("watching the pods of %s: %v", db, err)
	}
	s.stop = stop
	return s
}

// replaced is every replacement of a pod the watch saw (each UID after a
// pod's first), by the pod's name, in the order they were seen.
func (s *uidWatch) replaced() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	type replacement struct {
		pod string
		at  time.Time
	}
	var all []replacement
	for pod, l := range s.seen {
		for _, u := range l[1:] {
			all = append(all, replacement{pod, u.at})
		}
	}
	slices.SortFunc(all, func(a, b replacement) int { return a.at.Compare(b.at) })
	order := make([]string, len(all))
	for i, r := range all {
		order[i] = r.pod
	}
	return order
}

// finish stops the watch and returns what it saw.
func (s *uidWatch) finish() map[string][]sightedUID {
	s.stop()
	return s.seen
}

// showEach asks each pod of db's server for the settings names, through
// the pod's own address, and returns "pod: value value ..." lines.
func showEach(t *testing.T, ns, db string, pods []string, names ...string) map[string]string {
	t.Helper()
	var script strings.Builder
	for _, pod := range pods {
		ip := strings.TrimSpace(e2eutil.Kubectl(t, "-n", ns, "get", "pod", pod, "-o", "jsonpath={.status.podIP}"))
		fmt.Fprintf(&script, `printf '%s:'; psql -X -v ON_ERROR_STOP=1 -tA "postgresql://$USERNAME:$PASSWORD@%s:5432/$DATABASE" -c "SELECT string_agg(current_setting(n), ' ' ORDER BY o) FROM unnest('{%s}'::text[]) WITH ORDINALITY AS s(n, o)"
`, pod, ip, strings.Join(names, ","))
	}
	out := runClient(t, ns, db, postgresImage, script.String())
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		pod, values, ok := strings.Cut(line, ":")
		if ok {
			got[pod] = strings.TrimSpace(values)
		}
	}
	return got
}

// podStarts are the UIDs and start times of db's pods' servers (their
// container of that name), by pod.
func podStarts(t *testing.T, ns, db, container string) map[string]string {
	t.Helper()
	var list corev1.PodList
	e2eutil.GetJSON(t, &list, "-n", ns, "get", "pods", "-l", "app.kubernetes.io/instance="+db)
	out := map[string]string{}
	for _, p := range list.Items {
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == container && c.State.Running != nil {
				out[p.Name] = fmt.Sprintf("%s started %s, %d restarts", p.UID, c.State.Running.StartedAt.UTC().Format(time.RFC3339), c.RestartCount)
			}
		}
	}
	return out
}

// waitParameters waits until the ParametersApplied condition has seen
// the Database's generation with reason, and returns its message.
func waitParameters(t *testing.T, ns, db, reason string) string {
	t.Helper()
	generation := e2eutil.GetDB(t, ns, db).Generation
	var msg string
	e2eutil.Eventually(t, 3*converge, "ParametersApplied "+reason, func() (bool, string) {
		c := meta.FindStatusCondition(e2eutil.GetDB(t, ns, db).Status.Conditions, dbv1alpha1.ConditionParametersApplied)
		if c == nil {
			return false, "no ParametersApplied condition"
		}
		msg = c.Message
		return c.ObservedGeneration == generation && c.Reason == reason, fmt.Sprintf("%s %s (generation %d of %d)", c.Reason, c.Message, c.ObservedGeneration, generation)
	})
	return msg
}

// spec.parameters on a replicated PostgreSQL Database, as a user tunes it:
//  1. one read at start, given at creation, is on the servers' command
//     line from their first start (no restart for it);
//  2. one a running server takes (work_mem) is set on every server with
//     no pod restarted (same UIDs, start times, restart counts), and SHOW
//     on each server proves it;
//  3. the same from a ConfigMap, and a change of the ConfigMap;
//  4. a value the server refuses: the condition names the parameter in
//     the server's words, with a Warning event, the Database serves on,
//     and the servers keep the last good value;
//  5. one read at start (shared_buffers), changed under a writer: each pod
//     restarts once, the replicas first, the primary last after a
//     switchover, and no acknowledged write is lost;
//  6. one the primary accepts but no server starts with (huge_pages=on,
//     with no huge pages on the node): the rollout stops at the first
//     replica, the Database writes on, and once corrected, the failing
//     pod is replaced and every server runs the corrected parameters.
func TestParameters(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	yaml := dbYAML("tuned", "postgresql", "15", postgresImage, 3) + "  parameters:\n    max_connections: \"150\"\n"
	e2eutil.KubectlIn(t, yaml, "-n", ns, "create", "-f", "-")
	waitReplicating(t, ns, "tuned", "three replicas, one primary and two streaming")
	waitParameters(t, ns, "tuned", "Applied")
	pods := []string{"tuned-0", "tuned-1", "tuned-2"}
	if got := showEach(t, ns, "tuned", pods, "max_connections"); !equalAll(got, pods, "150") {
		t.Errorf("max_connections on the servers: %v, want 150 on each", got)
	}
	before := podStarts(t, ns, "tuned", "postgresql")
	if len(before) != 3 || slices.ContainsFunc(slices.Collect(maps.Values(before)), func(s string) bool { return !strings.HasSuffix(s, ", 0 restarts") }) {
		t.Errorf("servers at creation: %v, want three started once", before)
	}

	// 2. Live.
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/tuned", "--type=merge", "-p", `{"spec":{"parameters":{"work_mem":"64MB"}}}`)
	waitParameters(t, ns, "tuned", "Applied")
	if got := showEach(t, ns, "tuned", pods, "work_mem", "max_connections"); !equalAll(got, pods, "64MB 150") {
		t.Errorf("work_mem and max_connections on the servers: %v, want 64MB 150 on each", got)
	}
	if after := podStarts(t, ns, "tuned", "postgresql"); !maps.Equal(after, before) {
		t.Errorf("pods after a live parameter: %v, want unchanged %v", after, before)
	}

	// 3. From a ConfigMap, and its change, live too.
	e2eutil.KubectlIn(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pg-tuning\n  labels: {dbcontroller.io/parameters: \"true\"}\ndata:\n  statement_timeout: 30s\n",
		"-n", ns, "create", "-f", "-")
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/tuned", "--type=merge", "-p", `{"spec":{"parametersConfigMap":{"name":"pg-tuning"}}}`)
	waitParameters(t, ns, "tuned", "Applied")
	if got := showEach(t, ns, "tuned", pods, "statement_timeout", "work_mem"); !equalAll(got, pods, "30s 64MB") {
		t.Errorf("statement_timeout from the ConfigMap and work_mem on the servers: %v, want 30s 64MB on each", got)
	}
	changed := time.Now()
	e2eutil.Kubectl(t, "-n", ns, "patch", "configmap", "pg-tuning", "--type=merge", "-p", `{"data":{"statement_timeout":"45s"}}`)
	e2eutil.Eventually(t, converge, "the ConfigMap's change on every server", func() (bool, string) {
		got := showEach(t, ns, "tuned", pods, "statement_timeout")
		return equalAll(got, pods, "45s"), fmt.Sprintf("%v", got)
	})
	t.Logf("the ConfigMap's change on every server within %s", time.Since(changed).Round(time.Second))
	if after := podStarts(t, ns, "tuned", "postgresql"); !maps.Equal(after, before) {
		t.Errorf("pods after live parameters from a ConfigMap: %v, want unchanged %v", after, before)
	}

	// 4. Refused.
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/tuned", "--type=merge", "-p", `{"spec":{"parameters":{"work_mem":"lots"}}}`)
	msg := waitParameters(t, ns, "tuned", "ParameterRejected")
	t.Logf("refused: %s", msg)
	if !strings.Contains(msg, `parameter work_mem = "lots": invalid value for parameter "work_mem": "lots"`) {
		t.Errorf("the condition does not name the parameter in the server's words: %q", msg)
	}
	if n := eventsStarting(t, ns, "tuned", "ParameterRejected", ""); n != 1 {
		t.Errorf("%d ParameterRejected events, want 1", n)
	}
	if running, why := e2eutil.IsRunning(e2eutil.GetDB(t, ns, "tuned")); !running {
		t.Errorf("the Database does not run after a refused parameter: %s", why)
	}
	if got := showEach(t, ns, "tuned", pods, "work_mem"); !equalAll(got, pods, "64MB") {
		t.Errorf("work_mem after a refused value: %v, want the last good 64MB on each", got)
	}

	// 5. Read at start, under a writer.
	runClient(t, ns, "tuned", postgresImage, psql+`-c "CREATE TABLE w (n int PRIMARY KEY)"`)
	old := primaryOf(t, ns, "tuned")
	roles := watchRoles(t, ns, "tuned")
	uids := watchUIDs(t, ns, "tuned")
	writer := startWriter(t, ns, "tuned", writerBound)
	writer.waitAcknowledged(t, 3)
	changed = time.Now()
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/tuned", "--type=merge", "-p", `{"spec":{"parameters":{"work_mem":"64MB","shared_buffers":"256MB"}}}`)
	pending := waitParameters(t, ns, "tuned", "RestartPending")
	t.Logf("while the pods restart: %s", pending)
	waitParameters(t, ns, "tuned", "Applied")
	t.Logf("shared_buffers on every server %s after the change", time.Since(changed).Round(time.Second))
	waitReplicating(t, ns, "tuned", "the restarted servers to stream")
	seen := uids.finish()
	roles.finish(t)
	var order []string
	for _, pod := range pods {
		if len(seen[pod]) != 2 {
			t.Errorf("%s had pods %v, want restarted once", pod, seen[pod])
			continue
		}
		order = append(order, pod)
	}
	slices.SortFunc(order, func(a, b string) int { return seen[a][1].at.Compare(seen[b][1].at) })
	t.Logf("restarted in this order: %v (the primary was %s)", order, old)
	if len(order) == 3 && order[2] != old {
		t.Errorf("restarted %v: want the primary %s last", order, old)
	}
	if got := showEach(t, ns, "tuned", pods, "shared_buffers", "work_mem", "max_connections", "statement_timeout"); !equalAll(got, pods, "256MB 64MB 150 45s") {
		t.Errorf("settings after the restart: %v, want 256MB 64MB 150 45s on each", got)
	}
	parseWrites(t, writer.finish(t, 20)).across(t, ns, "tuned", "shared_buffers rolled out", changed)

	// 6. A value the primary accepts but no server starts with: the first
	// replica to restart fails, the rollout stops there and the Database
	// serves on; once corrected, that pod is replaced and the rollout
	// goes on.
	primary := primaryOf(t, ns, "tuned")
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/tuned", "--type=merge", "-p", `{"spec":{"parameters":{"huge_pages":"on"}}}`)
	var failing string
	e2eutil.Eventually(t, 3*converge, "a replica whose server does not start with huge_pages=on", func() (bool, string) {
		_, reason, msg := e2eutil.Condition(e2eutil.GetDB(t, ns, "tuned"), "Ready")
		for _, pod := range pods {
			if strings.Contains(msg, "pod "+pod+" keeps crashing") {
				failing = pod
			}
		}
		return reason == "CrashLooping" && failing != "" && failing != primary, reason + ": " + msg
	})
	t.Logf("huge_pages=on: %s", readyMessage(t, ns, "tuned"))
	if p := primaryOf(t, ns, "tuned"); p != primary {
		t.Errorf("the primary is %s after a replica failed to start, want %s still", p, primary)
	}
	runClient(t, ns, "tuned", postgresImage, psql+`-c "INSERT INTO w VALUES (-1)"`)
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/tuned", "--type=json", "-p", `[{"op":"remove","path":"/spec/parameters/huge_pages"}]`)
	waitParameters(t, ns, "tuned", "Applied")
	waitReplicating(t, ns, "tuned", "every server back, streaming")
	waitEvent := "Deleted pod " + failing + ": its server fails to start, and it is of an earlier revision"
	if n := eventsStarting(t, ns, "tuned", "Updated", waitEvent); n != 1 {
		t.Errorf("%d events %q, want 1", n, waitEvent)
	}
	if got := showEach(t, ns, "tuned", pods, "huge_pages", "shared_buffers"); !equalAll(got, pods, "try 256MB") {
		t.Errorf("huge_pages and shared_buffers after the correction: %v, want try 256MB on each", got)
	}
}

// equalAll says got has want for each of pods.
func equalAll(got map[string]string, pods []string, want string) bool {
	for _, pod := range pods {
		if got[pod] != want {
			return false
		}
	}
	return true
}

//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// A volume that cannot be provisioned is named in the Ready condition with
// the provisioner's own words, and in one Warning event.
func TestUnknownStorageClassIsNamed(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	createDB(t, ns, dbYAML("nowhere", "postgresql", "16", 1, "  storage:\n    storageClassName: does-not-exist\n"))
	db := waitCondition(t, ns, "nowhere", "Ready", "False", "VolumeNotProvisioned", converge)
	_, _, msg := e2eutil.Condition(db, "Ready")
	if want := `PersistentVolumeClaim data-nowhere-0 cannot be provisioned: storageclass.storage.k8s.io "does-not-exist" not found`; !strings.Contains(msg, want) {
		t.Errorf("Ready message = %q, want it to contain %q", msg, want)
	}
	if db.Status.Phase != "Provisioning" {
		t.Errorf("phase = %s, want Provisioning", db.Status.Phase)
	}
	waitEvent(t, ns, "nowhere", "Warning VolumeNotProvisioned", converge)
	out := e2eutil.Kubectl(t, "-n", ns, "get", "db", "nowhere")
	if !strings.Contains(out, "VolumeNotProvisioned") {
		t.Errorf("kubectl get db does not show the reason:\n%s", out)
	}
}

// Pods that no node can hold are named with the scheduler's message.
func TestUnschedulablePodsAreNamed(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	// The fake nodes have 32 CPUs.
	createDB(t, ns, dbYAML("huge", "mysql", "8.4", 1, "  resources:\n    requests:\n      cpu: \"500\"\n"))
	db := waitCondition(t, ns, "huge", "Ready", "False", "Unschedulable", converge)
	_, _, msg := e2eutil.Condition(db, "Ready")
	if !strings.Contains(msg, "pod huge-0 cannot be scheduled: ") || !strings.Contains(msg, "Insufficient cpu") {
		t.Errorf("Ready message = %q, want the scheduler's Insufficient cpu", msg)
	}
	waitEvent(t, ns, "huge", "Warning Unschedulable", converge)
	// Asking for less lets it run.
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/huge", "--type=merge", "-p", `{"spec":{"resources":{"requests":{"cpu":"1"}}}}`)
	e2eutil.WaitRunning(t, ns, "huge", 2*converge)
}

// Version changes the data cannot take are refused, with the StatefulSet
// left as it was.
func TestRefusedVersionChanges(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	for _, tt := range []struct {
		name, engine, from, to, reason, image string
		stopped                               bool
	}{
		// A higher PostgreSQL major is upgraded in place, but not while
		// the Database is stopped: there is no server to back up first.
		{"pg", "postgresql", "16", "17", "MajorUpgradeRefused", "postgres:16", true},
		{"mongo", "mongodb", "6.0", "8.0", "SeriesSkipRefused", "mongo:6.0", false},
		// MySQL's data is not MariaDB's, and MariaDB is not downgraded.
		{"my", "mysql", "8.4", "11.8", "MajorUpgradeRefused", "mysql:8.4", false},
		{"maria", "mysql", "11.8", "10.11", "DowngradeRefused", "mariadb:11.8", false},
	} {
		createDB(t, ns, dbYAML(tt.name, tt.engine, tt.from, 1, ""))
		e2eutil.WaitRunning(t, ns, tt.name, converge)
		if tt.stopped {
			e2eutil.Kubectl(t, "-n", ns, "patch", "db/"+tt.name, "--type=merge", "-p", `{"spec":{"replicas":0}}`)
			e2eutil.Eventually(t, converge, tt.name+" Stopped", func() (bool, string) {
				db := e2eutil.GetDB(t, ns, tt.name)
				return db.Status.Phase == "Stopped", string(db.Status.Phase)
			})
		}
		var before appsv1.StatefulSet
		e2eutil.GetJSON(t, &before, "-n", ns, "get", "statefulset", tt.name)
		e2eutil.Kubectl(t, "-n", ns, "patch", "db/"+tt.name, "--type=merge", "-p", `{"spec":{"version":"`+tt.to+`"}}`)
		db := waitCondition(t, ns, tt.name, "Ready", "False", tt.reason, converge)
		if db.Status.CurrentVersion != tt.from {
			t.Errorf("%s: currentVersion = %q, want %s", tt.name, db.Status.CurrentVersion, tt.from)
		}
		waitEvent(t, ns, tt.name, "Warning "+tt.reason, converge)
		var after appsv1.StatefulSet
		e2eutil.GetJSON(t, &after, "-n", ns, "get", "statefulset", tt.name)
		if after.Generation != before.Generation || after.Spec.Template.Spec.Containers[0].Image != tt.image {
			t.Errorf("%s: StatefulSet touched on a refused change: image %s, generation %d -> %d",
				tt.name, after.Spec.Template.Spec.Containers[0].Image, before.Generation, after.Generation)
		}
	}
	// MariaDB's servers upgrade their system tables at the first start of
	// a newer series (the official mariadb image's MARIADB_AUTO_UPGRADE);
	// MySQL's do it themselves.
	for name, want := range map[string]bool{"my": false, "maria": true} {
		var sts appsv1.StatefulSet
		e2eutil.GetJSON(t, &sts, "-n", ns, "get", "statefulset", name)
		has := slices.ContainsFunc(sts.Spec.Template.Spec.Containers[0].Env, func(e corev1.EnvVar) bool {
			return e.Name == "MARIADB_AUTO_UPGRADE" && e.Value == "1"
		})
		if has != want {
			t.Errorf("%s: MARIADB_AUTO_UPGRADE=1 in the server's environment: %v, want %v", name, has, want)
		}
	}
	// Started again, the PostgreSQL Database is upgraded in place: a
	// backup, the servers stopped, a Job, 17 started, a Job after it (kwok
	// completes the Jobs' pods: this is the orchestration alone; the real
	// node runs pg_upgrade).
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/pg", "--type=merge", "-p", `{"spec":{"replicas":1}}`)
	var phases []string
	e2eutil.Eventually(t, 2*converge, "pg to run 17, the upgrade ended", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, "pg")
		if u := db.Status.MajorUpgrade; u != nil && (len(phases) == 0 || phases[len(phases)-1] != string(u.Phase)) {
			phases = append(phases, string(u.Phase))
		}
		return db.Status.CurrentVersion == "17" && db.Status.Phase == "Running" && db.Status.MajorUpgrade == nil,
			fmt.Sprintf("%s %s %+v", db.Status.CurrentVersion, db.Status.Phase, db.Status.MajorUpgrade)
	})
	if want := []string{"BackingUp", "Upgrading", "Analyzing"}; !slices.Equal(phases, want) {
		t.Errorf("pg: upgrade phases seen %v, want %v", phases, want)
	}
	var upgraded appsv1.StatefulSet
	e2eutil.GetJSON(t, &upgraded, "-n", ns, "get", "statefulset", "pg")
	if image := upgraded.Spec.Template.Spec.Containers[0].Image; image != "postgres:17" {
		t.Errorf("pg: image %s after the upgrade, want postgres:17", image)
	}
	waitEvent(t, ns, "pg", "Normal MajorUpgrade", converge)

	// mongo 6.0 is end of life: it runs, and says so.
	db := e2eutil.GetDB(t, ns, "mongo")
	if status, reason, _ := e2eutil.Condition(db, "VersionSupported"); status != "False" || reason != "EndOfLife" {
		t.Errorf("mongo 6.0: VersionSupported = %s %s, want False EndOfLife", status, reason)
	}
	// One series at a time is allowed.
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/mongo", "--type=merge", "-p", `{"spec":{"version":"7.0"}}`)
	db = e2eutil.WaitRunning(t, ns, "mongo", converge)
	if db.Status.CurrentVersion != "7.0" {
		t.Errorf("mongo: currentVersion = %q after 6.0 -> 7.0, want 7.0", db.Status.CurrentVersion)
	}
	if status, _, _ := e2eutil.Condition(db, "VersionSupported"); status != "" {
		t.Errorf("mongo 7.0 still has a VersionSupported condition: %s", status)
	}
	// The controller sets the featureCompatibilityVersion with a Job
	// (kwok completes its pod); then the next series is allowed.
	e2eutil.Eventually(t, converge, "featureCompatibilityVersion 7.0", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, "mongo")
		return db.Status.FeatureCompatibilityVersion == "7.0", db.Status.FeatureCompatibilityVersion
	})
	e2eutil.Kubectl(t, "-n", ns, "get", "job", "mongo-fcv-7-0")
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/mongo", "--type=merge", "-p", `{"spec":{"version":"8.0"}}`)
	e2eutil.Eventually(t, converge, "mongo to run 8.0", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, "mongo")
		return db.Status.CurrentVersion == "8.0" && db.Status.Phase == "Running", db.Status.CurrentVersion + " " + string(db.Status.Phase)
	})
}

// A conflict clears within a minute of the foreign object going away,
// without waiting for the resync (10 minutes here).
func TestConflictClearsPromptly(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	e2eutil.KubectlIn(t, "apiVersion: v1\nkind: Service\nmetadata:\n  name: blocked\nspec:\n  ports:\n  - port: 80\n", "-n", ns, "create", "-f", "-")
	createDB(t, ns, dbYAML("blocked", "postgresql", "16", 1, ""))
	waitCondition(t, ns, "blocked", "Ready", "False", "ResourceConflict", converge)
	// Let a few backoff steps pass, so that the clearing is not caught by
	// the first, 5 s recheck.
	time.Sleep(20 * time.Second)
	deleted := time.Now()
	e2eutil.Kubectl(t, "-n", ns, "delete", "service", "blocked")
	e2eutil.WaitRunning(t, ns, "blocked", 75*time.Second)
	t.Logf("Running %s after the foreign Service was deleted", time.Since(deleted).Round(time.Second))
}

// Where the cluster serves the Prometheus Operator's PodMonitor API (the
// suite installs a stand-in CRD), a monitored Database gets a PodMonitor
// of its own: named as it, owned by it, selecting its servers' pods and
// their port named metrics, which the StatefulSet's exporter container
// has. A PodMonitor changed by hand is put back; one whose Database's
// monitoring is turned off goes; an unmonitored Database has none.
func TestPodMonitorPerDatabase(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	createDB(t, ns, dbYAML("watched", "postgresql", "16", 1, "  monitoring:\n    enabled: true\n"))
	createDB(t, ns, dbYAML("unwatched", "postgresql", "16", 1, ""))
	e2eutil.WaitRunning(t, ns, "watched", converge)
	e2eutil.WaitRunning(t, ns, "unwatched", converge)

	var pm struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
		Spec     struct {
			Selector            metav1.LabelSelector `json:"selector"`
			PodMetricsEndpoints []struct {
				Port string `json:"port"`
			} `json:"podMetricsEndpoints"`
		} `json:"spec"`
	}
	e2eutil.Eventually(t, converge, "the PodMonitor of watched", func() (bool, string) {
		err := e2eutil.TryGetJSON(&pm, "-n", ns, "get", "podmonitor", "watched")
		return err == nil, fmt.Sprint(err)
	})
	db := e2eutil.GetDB(t, ns, "watched")
	if owner := metav1.GetControllerOf(&pm.Metadata); owner == nil || owner.UID != db.UID {
		t.Errorf("PodMonitor watched's controller %+v, want Database watched (%s)", owner, db.UID)
	}
	var pods corev1.PodList
	e2eutil.GetJSON(t, &pods, "-n", ns, "get", "pods", "-l", metav1.FormatLabelSelector(&pm.Spec.Selector))
	if len(pods.Items) != 1 || pods.Items[0].Name != "watched-0" || len(pm.Spec.PodMetricsEndpoints) != 1 {
		t.Fatalf("the PodMonitor selects %d pods, endpoints %+v; want watched-0 and one endpoint", len(pods.Items), pm.Spec.PodMetricsEndpoints)
	}
	port := pm.Spec.PodMetricsEndpoints[0].Port
	var named []string
	for _, c := range pods.Items[0].Spec.Containers {
		for _, p := range c.Ports {
			named = append(named, c.Name+"/"+p.Name)
		}
	}
	if port != "metrics" || !slices.Contains(named, "exporter/metrics") {
		t.Errorf("the PodMonitor scrapes port %q; the pod's ports: %v", port, named)
	}
	if out, err := e2eutil.KubectlRun("", "-n", ns, "get", "podmonitor", "unwatched", "-o", "name"); err == nil {
		t.Errorf("an unmonitored Database has a PodMonitor: %s", out)
	}

	// Changed by hand: put back.
	e2eutil.Kubectl(t, "-n", ns, "patch", "podmonitor", "watched", "--type=merge", "-p", `{"spec":{"podMetricsEndpoints":[{"port":"postgresql"}]}}`)
	e2eutil.Eventually(t, converge, "the PodMonitor repaired", func() (bool, string) {
		e2eutil.GetJSON(t, &pm, "-n", ns, "get", "podmonitor", "watched")
		return len(pm.Spec.PodMetricsEndpoints) == 1 && pm.Spec.PodMetricsEndpoints[0].Port == "metrics", fmt.Sprintf("%+v", pm.Spec.PodMetricsEndpoints)
	})

	// Monitoring off: the PodMonitor goes.
	e2eutil.Kubectl(t, "-n", ns, "patch", "db", "watched", "--type=merge", "-p", `{"spec":{"monitoring":{"enabled":false}}}`)
	e2eutil.Eventually(t, converge, "the PodMonitor deleted", func() (bool, string) {
		out, err := e2eutil.KubectlRun("", "-n", ns, "get", "podmonitor", "watched", "-o", "name")
		return err != nil && strings.Contains(string(out), "NotFound"), string(out)
	})
}

//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// The pods carry spec.scheduling and spec.podMetadata as Kubernetes
// defines them; a replicated Database's pods are spread over nodes, and
// it has its two disruption budgets; a single server has neither, and a
// Database scaled below two replicas loses its budgets. spread Required
// leaves a second pod Pending on a cluster of one node, and the Ready
// condition says why.
func TestSchedulingAndDisruptionBudgets(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	priority := "e2e-databases-" + ns
	e2eutil.KubectlIn(t, fmt.Sprintf("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: %s\nvalue: 1000\n", priority), "create", "-f", "-")
	t.Cleanup(func() { _, _ = e2eutil.KubectlRun("", "delete", "priorityclass", priority) })
	startController(t, controllerOptions{namespace: ns})

	placed := fmt.Sprintf(`  scheduling:
    nodeSelector:
      type: kwok
    tolerations:
    - key: dedicated
      operator: Equal
      value: databases
      effect: NoSchedule
    topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: ScheduleAnyway
      labelSelector:
        matchLabels:
          app.kubernetes.io/instance: spread
    priorityClassName: %s
  podMetadata:
    labels:
      team: payments
    annotations:
      sidecar.istio.io/inject: "false"
`, priority)
	createDB(t, ns, dbYAML("spread", "postgresql", "16", 3, placed))
	createDB(t, ns, dbYAML("single", "postgresql", "16", 1, placed))
	createDB(t, ns, dbYAML("strict", "mysql", "8.4", 2, "  scheduling:\n    spread: Required\n"))

	// Every pod of spread runs on the one kwok node (Preferred), with
	// what the spec says.
	e2eutil.Eventually(t, 2*converge, "3 ready replicas of spread", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, "spread")
		return db.Status.ReadyReplicas == 3, fmt.Sprintf("ready %d", db.Status.ReadyReplicas)
	})
	var pods corev1.PodList
	e2eutil.GetJSON(t, &pods, "-n", ns, "get", "pods", "-l", "app.kubernetes.io/instance=spread")
	if len(pods.Items) != 3 {
		t.Fatalf("%d pods of spread, want 3", len(pods.Items))
	}
	for _, pod := range pods.Items {
		s := pod.Spec
		if s.NodeSelector["type"] != "kwok" || s.PriorityClassName != priority || pod.Labels["team"] != "payments" ||
			pod.Annotations["sidecar.istio.io/inject"] != "false" || len(s.TopologySpreadConstraints) != 1 ||
			!hasToleration(s.Tolerations, "dedicated", "databases") {
			t.Errorf("pod %s lacks the scheduling or the podMetadata asked for: labels %v, annotations %v, spec nodeSelector %v, priority %q, tolerations %v, spread %v",
				pod.Name, pod.Labels, pod.Annotations, s.NodeSelector, s.PriorityClassName, s.Tolerations, s.TopologySpreadConstraints)
		}
		anti := s.Affinity
		if anti == nil || anti.PodAntiAffinity == nil || len(anti.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
			anti.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != corev1.LabelHostname {
			t.Errorf("pod %s affinity %+v, want a preferred pod anti-affinity over kubernetes.io/hostname", pod.Name, anti)
		}
	}
	budgets := func(db string) map[string]policyv1.PodDisruptionBudgetSpec {
		var list policyv1.PodDisruptionBudgetList
		e2eutil.GetJSON(t, &list, "-n", ns, "get", "poddisruptionbudgets", "-l", "app.kubernetes.io/instance="+db)
		out := map[string]policyv1.PodDisruptionBudgetSpec{}
		for _, b := range list.Items {
			ownedBy(t, &b, "Database", db)
			out[b.Name] = b.Spec
		}
		return out
	}
	got := budgets("spread")
	// Two budgets that select no pod in common (the Eviction API refuses
	// a pod that two select): the primary, held, and the others, of which
	// one may go at a time.
	if others, primary := got["spread"], got["spread-primary"]; len(got) != 2 || others.MinAvailable == nil || others.MinAvailable.IntValue() != 1 ||
		len(others.Selector.MatchExpressions) != 1 || others.Selector.MatchExpressions[0].Operator != "NotIn" ||
		primary.MinAvailable == nil || primary.MinAvailable.IntValue() != 1 || primary.Selector.MatchLabels["dbcontroller.io/role"] != "primary" {
		t.Errorf("budgets of spread: %+v; want spread (minAvailable 1 of the pods not primary) and spread-primary (minAvailable 1 over the primary)", got)
	}

	// The single server: the same placement, no spread, no budget.
	e2eutil.WaitRunning(t, ns, "single", converge)
	var sts appsv1.StatefulSet
	e2eutil.GetJSON(t, &sts, "-n", ns, "get", "statefulset", "single")
	if sts.Spec.Template.Spec.Affinity != nil || sts.Spec.Template.Spec.PriorityClassName != priority {
		t.Errorf("single's pod template: affinity %+v, priority %q; want none, and %s", sts.Spec.Template.Spec.Affinity, sts.Spec.Template.Spec.PriorityClassName, priority)
	}
	if got := budgets("single"); len(got) != 0 {
		t.Errorf("budgets of single: %v, want none", got)
	}

	// Required, with one node: the second pod cannot be placed. (On kwok
	// no server answers, so the Database's Ready condition names that
	// first: ServersUnreachable.)
	e2eutil.Eventually(t, converge, "strict-1 unschedulable for the anti-affinity", func() (bool, string) {
		var pod corev1.Pod
		if err := e2eutil.TryGetJSON(&pod, "-n", ns, "get", "pod", "strict-1"); err != nil {
			return false, "no pod strict-1 yet: " + err.Error()
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && strings.Contains(c.Message, "anti-affinity"),
					fmt.Sprintf("PodScheduled=%s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		return false, "no PodScheduled condition on strict-1"
	})

	// Scaled to one, spread no longer needs its budgets.
	e2eutil.Kubectl(t, "-n", ns, "scale", "db/spread", "--replicas=1")
	e2eutil.Eventually(t, converge, "the budgets of spread to go", func() (bool, string) {
		got := budgets("spread")
		return len(got) == 0, fmt.Sprint(got)
	})
	// And a user's podAntiAffinity replaces the spread.
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/strict", "--type=merge", "-p",
		`{"spec":{"scheduling":{"affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"podAffinityTerm":{"topologyKey":"topology.kubernetes.io/zone","labelSelector":{"matchLabels":{"app":"cache"}}}}]}}}}}`)
	e2eutil.Eventually(t, converge, "strict's template to carry the user's anti-affinity", func() (bool, string) {
		var sts appsv1.StatefulSet
		e2eutil.GetJSON(t, &sts, "-n", ns, "get", "statefulset", "strict")
		a := sts.Spec.Template.Spec.Affinity
		ok := a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 &&
			len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 1 &&
			equality.Semantic.DeepEqual(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey, "topology.kubernetes.io/zone")
		return ok, fmt.Sprintf("%+v", a)
	})

	// What the schema refuses.
	for _, tt := range []struct{ patch, wantErr string }{
		{`{"spec":{"podMetadata":{"labels":{"app.kubernetes.io/instance":"other"}}}}`, "podMetadata.labels may not set the controller's labels"},
		{`{"spec":{"podMetadata":{"labels":{"dbcontroller.io/role":"primary"}}}}`, "podMetadata.labels may not set the controller's labels"},
		{`{"spec":{"podMetadata":{"annotations":{"dbcontroller.io/applied-digest":"x"}}}}`, "podMetadata.annotations may not set annotations under dbcontroller.io/"},
		{`{"spec":{"scheduling":{"spread":"Sometimes"}}}`, `spec.scheduling.spread: Unsupported value: "Sometimes"`},
	} {
		out, err := e2eutil.KubectlRun("", "-n", ns, "patch", "db/single", "--type=merge", "-p", tt.patch)
		if err == nil || !strings.Contains(string(out), tt.wantErr) {
			t.Errorf("patch %s: err %v, output %q; want refused with %q", tt.patch, err, out, tt.wantErr)
		}
	}
}

func hasToleration(ts []corev1.Toleration, key, value string) bool {
	for _, tol := range ts {
		if tol.Key == key && tol.Value == value {
			return true
		}
	}
	return false
}

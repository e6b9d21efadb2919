package builder

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// The pod template carries spec.scheduling as Kubernetes defines it, and
// spec.podMetadata beside the controller's own labels; a replicated
// Database's pods are spread over nodes as spec.scheduling.spread asks,
// unless the user's affinity has a podAntiAffinity of its own.
func TestScheduling(t *testing.T) {
	ours := &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": testName, "app.kubernetes.io/name": "postgresql"}}
	preferred := &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
		Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: ours, TopologyKey: corev1.LabelHostname}}}}
	required := &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: ours, TopologyKey: corev1.LabelHostname}}}
	zones := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}}}}
	theirs := &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cache"}}, TopologyKey: corev1.LabelHostname}}}
	everything := &dbv1alpha1.SchedulingSpec{
		NodeSelector:              map[string]string{"disk": "ssd"},
		Tolerations:               []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule}},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: ours}},
		PriorityClassName:         "databases",
	}
	for _, tt := range []struct {
		name       string
		replicated bool
		scheduling *dbv1alpha1.SchedulingSpec
		want       *corev1.Affinity
	}{
		{"a single server: no affinity", false, nil, nil},
		{"replicated: spread over nodes, preferred", true, nil, &corev1.Affinity{PodAntiAffinity: preferred}},
		{"replicated, spread Required", true, &dbv1alpha1.SchedulingSpec{Spread: dbv1alpha1.SpreadRequired}, &corev1.Affinity{PodAntiAffinity: required}},
		{"replicated, spread None", true, &dbv1alpha1.SchedulingSpec{Spread: dbv1alpha1.SpreadNone}, nil},
		{"replicated, a node affinity of the user's: kept, with the spread", true, &dbv1alpha1.SchedulingSpec{Affinity: &corev1.Affinity{NodeAffinity: zones}},
			&corev1.Affinity{NodeAffinity: zones, PodAntiAffinity: preferred}},
		{"replicated, a pod anti-affinity of the user's: in place of the spread", true, &dbv1alpha1.SchedulingSpec{Affinity: &corev1.Affinity{PodAntiAffinity: theirs}},
			&corev1.Affinity{PodAntiAffinity: theirs}},
		{"a single server: the user's affinity as it is", false, &dbv1alpha1.SchedulingSpec{Affinity: &corev1.Affinity{NodeAffinity: zones}},
			&corev1.Affinity{NodeAffinity: zones}},
		{"every field passed through", false, everything, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := newDatabase(dbv1alpha1.EnginePostgreSQL, "16")
			if tt.replicated {
				db.Spec.Replicas = ptr.To[int32](3)
			}
			db.Spec.Scheduling = tt.scheduling
			db.Spec.PodMetadata = &dbv1alpha1.PodMetadata{Labels: map[string]string{"team": "payments"}, Annotations: map[string]string{"sidecar.istio.io/inject": "false"}}
			sts := statefulSetOf(t, NewStatefulSet(db, lookup(t, db.Spec.Engine), "postgres:16", StorageOf(db), nil, tt.replicated))
			pod := sts.Spec.Template
			if !equality.Semantic.DeepEqual(pod.Spec.Affinity, tt.want) {
				t.Errorf("affinity %+v, want %+v", pod.Spec.Affinity, tt.want)
			}
			if s := tt.scheduling; s != nil {
				if !equality.Semantic.DeepEqual(pod.Spec.NodeSelector, s.NodeSelector) || !equality.Semantic.DeepEqual(pod.Spec.Tolerations, s.Tolerations) ||
					!equality.Semantic.DeepEqual(pod.Spec.TopologySpreadConstraints, s.TopologySpreadConstraints) || pod.Spec.PriorityClassName != s.PriorityClassName {
					t.Errorf("pod spec %+v does not carry the scheduling %+v", pod.Spec, s)
				}
			}
			wantLabels := map[string]string{"app.kubernetes.io/instance": testName, "app.kubernetes.io/name": "postgresql",
				"app.kubernetes.io/managed-by": "database-controller", "team": "payments"}
			if !equality.Semantic.DeepEqual(pod.Labels, wantLabels) {
				t.Errorf("pod labels %v, want %v", pod.Labels, wantLabels)
			}
			if pod.Annotations["sidecar.istio.io/inject"] != "false" {
				t.Errorf("pod annotations %v lack the podMetadata's", pod.Annotations)
			}
		})
	}
}

func statefulSetOf(t *testing.T, from any) *appsv1.StatefulSet {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	if err := Convert(from, sts); err != nil {
		t.Fatal(err)
	}
	return sts
}

package builder

import (
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// withScheduling gives the pod spec spec.scheduling's fields as they are,
// and a replicated Database's spread over nodes (spreadAffinity).
func withScheduling(podSpec *corev1ac.PodSpecApplyConfiguration, db *dbv1alpha1.Database, replicated bool) {
	var affinity *corev1ac.AffinityApplyConfiguration
	if s := db.Spec.Scheduling; s != nil {
		if len(s.NodeSelector) > 0 {
			podSpec.WithNodeSelector(s.NodeSelector)
		}
		for k := range s.Tolerations {
			t := &corev1ac.TolerationApplyConfiguration{}
			mustConvert(&s.Tolerations[k], t)
			podSpec.WithTolerations(t)
		}
		for k := range s.TopologySpreadConstraints {
			c := &corev1ac.TopologySpreadConstraintApplyConfiguration{}
			mustConvert(&s.TopologySpreadConstraints[k], c)
			podSpec.WithTopologySpreadConstraints(c)
		}
		if s.PriorityClassName != "" {
			podSpec.WithPriorityClassName(s.PriorityClassName)
		}
		if s.Affinity != nil {
			affinity = &corev1ac.AffinityApplyConfiguration{}
			mustConvert(s.Affinity, affinity)
		}
	}
	if spread := spreadAffinity(db, replicated); spread != nil && (affinity == nil || affinity.PodAntiAffinity == nil) {
		if affinity == nil {
			affinity = corev1ac.Affinity()
		}
		affinity.WithPodAntiAffinity(spread)
	}
	if affinity != nil && (affinity.NodeAffinity != nil || affinity.PodAffinity != nil || affinity.PodAntiAffinity != nil) {
		podSpec.WithAffinity(affinity)
	}
}

// spreadAffinity is the pod anti-affinity that spreads a replicated
// Database's pods over nodes, as spec.scheduling.spread asks: nil for a
// Database that is not replicated, and for SpreadNone.
func spreadAffinity(db *dbv1alpha1.Database, replicated bool) *corev1ac.PodAntiAffinityApplyConfiguration {
	if !replicated {
		return nil
	}
	term := corev1ac.PodAffinityTerm().
		WithTopologyKey(corev1.LabelHostname).
		WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(names.SelectorLabels(db)))
	switch db.Spec.SpreadPolicy() {
	case dbv1alpha1.SpreadRequired:
		return corev1ac.PodAntiAffinity().WithRequiredDuringSchedulingIgnoredDuringExecution(term)
	case dbv1alpha1.SpreadPreferred:
		return corev1ac.PodAntiAffinity().WithPreferredDuringSchedulingIgnoredDuringExecution(
			corev1ac.WeightedPodAffinityTerm().WithWeight(100).WithPodAffinityTerm(term))
	}
	return nil
}

// podTemplateMetadata is the pods' labels and annotations: the
// controller's labels, and spec.podMetadata's (which the schema keeps off
// the controller's keys).
func podTemplateMetadata(db *dbv1alpha1.Database) (labels, annotations map[string]string) {
	labels = names.Labels(db)
	if m := db.Spec.PodMetadata; m != nil {
		for k, v := range m.Labels {
			if _, own := labels[k]; !own {
				labels[k] = v
			}
		}
		if len(m.Annotations) > 0 {
			annotations = make(map[string]string, len(m.Annotations))
			for k, v := range m.Annotations {
				annotations[k] = v
			}
		}
	}
	return labels, annotations
}

// mustConvert converts a Kubernetes type into its apply configuration,
// which has the same JSON form; both are the API's own types, so it cannot
// fail.
func mustConvert(from, into any) {
	if err := Convert(from, into); err != nil {
		panic(err)
	}
}

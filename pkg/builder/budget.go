package builder

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// NewDisruptionBudgets builds the two PodDisruptionBudgets of a replicated
// Database, over pods that do not overlap: the Eviction API refuses to
// evict a pod that two budgets select. <name>-primary selects the pod
// labelled primary and keeps it from being evicted (minAvailable 1), so
// that a drain waits while the controller switches over to a replica on
// another node (it does so once the primary's node is cordoned); the
// former primary, a replica then, goes under <name>, which selects every
// other pod and lets one of the replicas asked for be unavailable at a
// time (minAvailable: spec.replicas - 2). When no pod of the Database runs
// on a node that is not cordoned and every other pod is ready (stranded),
// no switchover can move the primary off, and holding it would hold the
// drain for good: <name>-primary then lets it go, and its pod, as it is
// deleted, hands over to a replica at once.
//
// A pod that is not ready may be evicted whatever the budgets say
// (unhealthyPodEvictionPolicy AlwaysAllow): evicting it takes nothing
// that serves, and a server that cannot start must not hold a drain.
func NewDisruptionBudgets(db *dbv1alpha1.Database, stranded bool) []*policyv1ac.PodDisruptionBudgetApplyConfiguration {
	budget := func(name string, selector *metav1ac.LabelSelectorApplyConfiguration, minAvailable int32) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
		return policyv1ac.PodDisruptionBudget(name, db.Namespace).
			WithLabels(names.Labels(db)).
			WithOwnerReferences(ownerReference(db)).
			WithSpec(policyv1ac.PodDisruptionBudgetSpec().
				WithSelector(selector).
				WithMinAvailable(intstr.FromInt32(minAvailable)).
				WithUnhealthyPodEvictionPolicy(policyv1.AlwaysAllow))
	}
	notPrimary := metav1ac.LabelSelector().WithMatchLabels(names.SelectorLabels(db)).
		WithMatchExpressions(metav1ac.LabelSelectorRequirement().
			WithKey(dbv1alpha1.LabelRole).WithOperator(metav1.LabelSelectorOpNotIn).WithValues(dbv1alpha1.RolePrimary))
	hold := int32(1)
	if stranded {
		hold = 0
	}
	return []*policyv1ac.PodDisruptionBudgetApplyConfiguration{
		budget(names.DisruptionBudgetName(db), notPrimary, max(db.Spec.DesiredReplicas()-2, 0)),
		budget(names.PrimaryDisruptionBudgetName(db), metav1ac.LabelSelector().WithMatchLabels(names.RoleSelectorLabels(db, dbv1alpha1.RolePrimary)), hold),
	}
}

package builder

import (
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// NewDisruptionBudgets builds the two PodDisruptionBudgets of a replicated
// Database. A voluntary eviction (a drain) takes one of its servers at a
// time: the first budget allows one pod unavailable out of them all. The
// second keeps the pod labelled primary from being evicted, so that a
// drain waits while the controller switches over to a replica on another
// node (it does so once the primary's node is cordoned); the former
// primary, a replica then, goes under the first budget. When no pod of the
// Database runs on a node that is not cordoned (stranded), no switchover
// can move the primary off, and holding it would hold the drain for good:
// the second budget then lets it go, and its pod, as it is deleted, hands
// over to a replica at once.
//
// A pod that is not ready may be evicted whatever the budgets say
// (unhealthyPodEvictionPolicy AlwaysAllow): evicting it takes nothing
// that serves, and a server that cannot start must not hold a drain.
func NewDisruptionBudgets(db *dbv1alpha1.Database, stranded bool) []*policyv1ac.PodDisruptionBudgetApplyConfiguration {
	budget := func(name string, selector map[string]string) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
		return policyv1ac.PodDisruptionBudget(name, db.Namespace).
			WithLabels(names.Labels(db)).
			WithOwnerReferences(ownerReference(db)).
			WithSpec(policyv1ac.PodDisruptionBudgetSpec().
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
				WithUnhealthyPodEvictionPolicy(policyv1.AlwaysAllow))
	}
	all := budget(names.DisruptionBudgetName(db), names.SelectorLabels(db))
	all.Spec.WithMaxUnavailable(intstr.FromInt32(1))
	primary := budget(names.PrimaryDisruptionBudgetName(db), names.RoleSelectorLabels(db, dbv1alpha1.RolePrimary))
	hold := int32(1)
	if stranded {
		hold = 0
	}
	primary.Spec.WithMinAvailable(intstr.FromInt32(hold))
	return []*policyv1ac.PodDisruptionBudgetApplyConfiguration{all, primary}
}

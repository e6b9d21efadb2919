package builder

import (
	"maps"
	"slices"
	"strings"

	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/dbcontroller/database-controller/pkg/engine"
)

// WithParameters gives the server of sts the parameters it reads at start
// (plan.StartParameters), on its command line, in the order of their
// names, after the server's first argument (its name, or MySQL's
// --defaults-extra-file, which must come first) and before its other
// arguments: a replicated PostgreSQL server's cluster_name stays last,
// which ps shows. A '$' is doubled, as the kubelet would otherwise expand
// $(NAME) from the container's environment.
func WithParameters(sts *appsv1ac.StatefulSetApplyConfiguration, e engine.Engine, start map[string]string) {
	pr := e.Runtime().Parameters
	if pr == nil || len(start) == 0 {
		return
	}
	spec := sts.Spec.Template.Spec
	var server *corev1ac.ContainerApplyConfiguration
	for i := range spec.Containers {
		if *spec.Containers[i].Name == e.Name() {
			server = &spec.Containers[i]
		}
	}
	var given []string
	for _, name := range slices.Sorted(maps.Keys(start)) {
		given = append(given, pr.Args(name, strings.ReplaceAll(start[name], "$", "$$"))...)
	}
	withServerArgs(server, pr.Server, given)
}

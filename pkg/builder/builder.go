// Package builder turns a Database into the objects it should own, one file
// per child. Every function here is pure: it reads the Database and its
// engine and returns an apply configuration holding exactly the fields the
// controller owns, which is both what it creates and what it compares and
// repairs.
package builder

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
)

// ownerReference makes db the controller of a child, so that the garbage
// collector deletes the child with it.
func ownerReference(db *dbv1alpha1.Database) *metav1ac.OwnerReferenceApplyConfiguration {
	gvk := dbv1alpha1.SchemeGroupVersion.WithKind("Database")
	return metav1ac.OwnerReference().
		WithAPIVersion(gvk.GroupVersion().String()).
		WithKind(gvk.Kind).
		WithName(db.Name).
		WithUID(db.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// containerSecurity is the security context of every container the
// controller runs: no privilege, no capability, a read-only root filesystem.
func containerSecurity() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithReadOnlyRootFilesystem(true).
		WithRunAsNonRoot(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
}

// jobPodSpec is the pod of a Job of the controller: it runs once as uid,
// with no service account token and no service links.
func jobPodSpec(uid int64) *corev1ac.PodSpecApplyConfiguration {
	return corev1ac.PodSpec().
		WithRestartPolicy(corev1.RestartPolicyNever).
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(uid).
			WithRunAsGroup(uid).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault)))
}

// servicePort is the server's port on both Services.
func servicePort(rt *engine.Runtime) *corev1ac.ServicePortApplyConfiguration {
	return corev1ac.ServicePort().
		WithName(rt.PortName).
		WithProtocol(corev1.ProtocolTCP).
		WithPort(rt.Port).
		WithTargetPort(intstr.FromString(rt.PortName))
}

// Convert fills into from from, through the JSON shape they share: an
// apply configuration into the typed object to Create, or a status into its
// apply configuration. An apply configuration serializes only the fields
// that are set.
func Convert(from, into any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// withServerArgs puts args on server's command line. Where the command
// line starts with the server's name (first), after it and before the
// other arguments: a replicated PostgreSQL server's cluster_name stays
// last, which ps shows; a server with no arguments yet gets first before
// them. Where it does not (first is "": the image's entrypoint puts its
// server before arguments that begin with "-"), after the others, so
// that what must come first stays first (MySQL's --defaults-extra-file)
// and an option and its value stay together (MongoDB's --tlsMode
// requireTLS).
func withServerArgs(server *corev1ac.ContainerApplyConfiguration, first string, args []string) {
	switch {
	case first == "":
		server.Args = append(server.Args, args...)
	case len(server.Args) > 0:
		server.Args = append(append([]string{server.Args[0]}, args...), server.Args[1:]...)
	default:
		server.Args = append([]string{first}, args...)
	}
}

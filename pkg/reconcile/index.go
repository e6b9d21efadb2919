package reconcile

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/cached"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// IndexInstance is the name of the index, on the pods, claims and Jobs
// informers, of objects by namespace and instance label: the Database they
// belong to. A lister's List with a label selector looks at every object
// of the namespace, and hands back a slice of all of them to filter; at a
// thousand Databases in one namespace that is the bulk of what a sync
// allocates. The index hands back a Database's own objects only.
const IndexInstance = "instance"

// IndexByInstance indexes an object by namespace/instance label; objects
// without the label are not indexed.
func IndexByInstance(obj interface{}) ([]string, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	instance := o.GetLabels()[names.LabelInstance]
	if instance == "" {
		return nil, nil
	}
	return []string{o.GetNamespace() + "/" + instance}, nil
}

// IndexParametersConfigMap is the name of the index, on the Databases
// informer, of Databases by the ConfigMap their spec.parametersConfigMap
// names (namespace/name), so that its change leads to them.
const IndexParametersConfigMap = "parametersConfigMap"

// IndexTLSSecret indexes Databases by the Secret of spec.tls.secretName,
// as namespace/name, so that a change of it leads to them.
const IndexTLSSecret = "tlsSecret"

// IndexByTLSSecret is the index function of IndexTLSSecret.
func IndexByTLSSecret(obj interface{}) ([]string, error) {
	db, ok := obj.(*dbv1alpha1.Database)
	if !ok || db.Spec.TLS == nil || db.Spec.TLS.SecretName == "" {
		return nil, nil
	}
	return []string{db.Namespace + "/" + db.Spec.TLS.SecretName}, nil
}

// IndexByParametersConfigMap indexes a Database by namespace/name of the
// ConfigMap of its spec.parametersConfigMap; others are not indexed.
func IndexByParametersConfigMap(obj interface{}) ([]string, error) {
	db, ok := obj.(*dbv1alpha1.Database)
	if !ok || db.Spec.ParametersConfigMap == nil {
		return nil, nil
	}
	return []string{db.Namespace + "/" + db.Spec.ParametersConfigMap.Name}, nil
}

// IndexClaim is the name of the index, on the informer of claims' events, of
// events by the claim they are about: its namespace/name, then "/" and the
// UID the event names, "" when it names none (claimEventsKey).
const IndexClaim = "claim"

// IndexByClaim indexes an event about a PersistentVolumeClaim by the
// claim's namespace/name/UID; other events are not indexed.
func IndexByClaim(obj interface{}) ([]string, error) {
	e, ok := obj.(*corev1.Event)
	if !ok || e.InvolvedObject.Kind != "PersistentVolumeClaim" || e.InvolvedObject.Name == "" {
		return nil, nil
	}
	return []string{claimEventsKey(ClaimOf(e), e.InvolvedObject.UID)}, nil
}

// claimEventsKey is the key of IndexClaim of the events about the claim
// name, of UID uid: "" for events that name no UID.
func claimEventsKey(name cache.ObjectName, uid types.UID) string {
	return name.String() + "/" + string(uid)
}

// ClaimOf names the claim an event is about: in the event's own namespace
// when the reference names none.
func ClaimOf(e *corev1.Event) cache.ObjectName {
	ns := e.InvolvedObject.Namespace
	if ns == "" {
		ns = e.Namespace
	}
	return cache.NewObjectName(ns, e.InvolvedObject.Name)
}

// IndexNode is the name of the index, on the pods informer, of pods by the
// node they run on: a node cordoned leads to the Databases it runs.
const IndexNode = "node"

// IndexByNode indexes a pod by its node's name; pods not scheduled yet
// are not indexed. It reads a compact pod's node without making the pod
// whole: it runs on each change of a pod, for the old and the new.
func IndexByNode(obj interface{}) ([]string, error) {
	var node string
	switch p := obj.(type) {
	case *cached.Pod:
		node = p.NodeName()
	case *corev1.Pod:
		node = p.Spec.NodeName
	}
	if node == "" {
		return nil, nil
	}
	return []string{node}, nil
}

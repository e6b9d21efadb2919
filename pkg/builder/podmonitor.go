package builder

import (
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// PodMonitorGVR is the Prometheus Operator's PodMonitor resource. The
// controller writes PodMonitors as unstructured objects: it does not
// import the operator's API.
var PodMonitorGVR = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors"}

// NewPodMonitor builds the PodMonitor of a monitored Database, named as
// the Database: the Prometheus Operator scrapes the port named metrics of
// its servers' pods (WithExporter), and labels each series with the pod's
// namespace and name.
func NewPodMonitor(db *dbv1alpha1.Database) *unstructured.Unstructured {
	owner := ownerReference(db)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": PodMonitorGVR.GroupVersion().String(),
		"kind":       "PodMonitor",
		"metadata": map[string]any{
			"name":      db.Name,
			"namespace": db.Namespace,
			"labels":    stringMap(names.Labels(db)),
			"ownerReferences": []any{map[string]any{
				"apiVersion": *owner.APIVersion, "kind": *owner.Kind, "name": *owner.Name, "uid": string(*owner.UID),
				"controller": true, "blockOwnerDeletion": true,
			}},
		},
		"spec": PodMonitorSpec(db),
	}}
}

// PodMonitorSpec is the spec of db's PodMonitor, as JSON decodes it.
func PodMonitorSpec(db *dbv1alpha1.Database) map[string]any {
	return map[string]any{
		"selector":            map[string]any{"matchLabels": stringMap(names.SelectorLabels(db))},
		"podMetricsEndpoints": []any{map[string]any{"port": engine.MetricsPortName}},
	}
}

// stringMap is m with values of type any, as unstructured objects hold them.
func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range maps.All(m) {
		out[k] = v
	}
	return out
}

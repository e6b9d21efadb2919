package builder

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbcontroller/database-controller/pkg/cached"
)

// StripTemplates keeps of the spec of sts, for the informer cache, what a
// pass reads there, and marks its pod template stripped: the replicas; of
// the pod template, each container's name, image and arguments (the image
// that runs, ImageOf; the parameters given at start), each init
// container's name and image (the tools image, ToolsImageOf) and the
// restore's environment (Restores, BaseRestoring); of each claim template,
// its name, the storage it asks for and its class (StorageOfStatefulSet).
// The rest of the spec (the selector, the labels, annotations, volumes,
// probes, resources, security contexts and other environments of the pod
// template: most of a StatefulSet's memory) is read only by the drift
// comparison, which reads the StatefulSet from the API server when the
// cache's copy is stripped (TemplateStripped). The status is kept.
func StripTemplates(sts *appsv1.StatefulSet) {
	in := sts.Spec
	out := appsv1.StatefulSetSpec{Replicas: in.Replicas}
	pod := &out.Template.Spec
	for _, c := range in.Template.Spec.Containers {
		pod.Containers = append(pod.Containers, corev1.Container{Name: c.Name, Image: c.Image, Args: c.Args})
	}
	for _, c := range in.Template.Spec.InitContainers {
		kept := corev1.Container{Name: c.Name, Image: c.Image}
		if c.Name == restoreContainer {
			kept.Env = c.Env
		}
		pod.InitContainers = append(pod.InitContainers, kept)
	}
	out.Template.Annotations = map[string]string{cached.AnnotationTemplateStripped: "true"}
	for _, t := range in.VolumeClaimTemplates {
		kept := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: t.Name},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: t.Spec.StorageClassName}}
		if size, ok := t.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			kept.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: size}
		}
		out.VolumeClaimTemplates = append(out.VolumeClaimTemplates, kept)
	}
	sts.Spec = out
}

// TemplateStripped reports whether the pod template of sts is the informer
// cache's stripped copy (StripTemplates), which the drift comparison cannot
// read.
func TemplateStripped(sts *appsv1.StatefulSet) bool {
	return sts != nil && sts.Spec.Template.Annotations[cached.AnnotationTemplateStripped] == "true"
}

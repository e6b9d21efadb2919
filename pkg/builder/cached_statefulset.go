package builder

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationTemplateStripped marks the pod template of a StatefulSet that
// StripTemplate has stripped: it is set on the copy in the informer cache
// only, never on an object the controller writes.
const AnnotationTemplateStripped = "dbcontroller.io/cache-stripped-template"

// StripTemplate keeps of the pod template of sts, for the informer cache,
// what a pass reads there, and marks it stripped: of each container its
// name, image and arguments (the image that runs, ImageOf; the parameters
// given at start); of each init container its name and image (the tools
// image, ToolsImageOf) and, for the restore's, its environment (Restores,
// BaseRestoring). The rest of the template (its labels and annotations,
// volumes, probes, resources, security contexts, the environment of the
// others: most of a StatefulSet's memory) is read only by the drift
// comparison, which reads the StatefulSet from the API server when the
// cache's copy is stripped (TemplateStripped). The rest of the spec, the
// volume claim templates with it, and the status are kept.
func StripTemplate(sts *appsv1.StatefulSet) {
	in := sts.Spec.Template.Spec
	out := corev1.PodSpec{}
	for _, c := range in.Containers {
		out.Containers = append(out.Containers, corev1.Container{Name: c.Name, Image: c.Image, Args: c.Args})
	}
	for _, c := range in.InitContainers {
		kept := corev1.Container{Name: c.Name, Image: c.Image}
		if c.Name == restoreContainer {
			kept.Env = c.Env
		}
		out.InitContainers = append(out.InitContainers, kept)
	}
	sts.Spec.Template = corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationTemplateStripped: "true"}},
		Spec:       out,
	}
}

// TemplateStripped reports whether the pod template of sts is the informer
// cache's stripped copy (StripTemplate), which the drift comparison cannot
// read.
func TemplateStripped(sts *appsv1.StatefulSet) bool {
	return sts != nil && sts.Spec.Template.Annotations[AnnotationTemplateStripped] == "true"
}

package podnet

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/dbcontroller/database-controller/pkg/cached"
)

// IndexPodIP is the name of the pods' index by their addresses.
const IndexPodIP = "podIP"

// IndexByPodIP is the index function of IndexPodIP: a pod's addresses,
// its PodIPs or, when it has none, its PodIP. It reads a compact pod's
// addresses without making the pod whole: it runs on each change of a
// pod, for the old and the new.
func IndexByPodIP(obj interface{}) ([]string, error) {
	switch pod := obj.(type) {
	case *cached.Pod:
		return pod.Addresses(), nil
	case *corev1.Pod:
		return cached.PodAddresses(pod), nil
	}
	return nil, nil
}

// PodOfIndexer finds a pod by its address in pods, an informer's indexer
// with IndexPodIP: the one that is not finished (a finished pod's address
// may be another's now), deleted or not.
func PodOfIndexer(pods cache.Indexer) PodOf {
	return func(ip string) (Pod, bool) {
		objs, err := pods.ByIndex(IndexPodIP, ip)
		if err != nil {
			return Pod{}, false
		}
		for _, obj := range objs {
			pod, ok := cached.Whole(obj).(*corev1.Pod)
			if ok && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
				return Pod{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}, true
			}
		}
		return Pod{}, false
	}
}

package cached

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// PodLister lists and gets the pods of indexer, a cache that may hold them
// compact, whole (Whole), as client-go's lister of a cache of pods does.
func PodLister(indexer cache.Indexer) corelisters.PodLister {
	return podLister{indexer: indexer}
}

// podLister is a PodLister, and the lister of one namespace's pods
// (namespace not ""), whose reads it limits to namespace.
type podLister struct {
	indexer   cache.Indexer
	namespace string
}

func (l podLister) List(selector labels.Selector) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	err := cache.ListAllByNamespace(l.indexer, l.namespace, selector, func(obj any) {
		if pod, ok := Whole(obj).(*corev1.Pod); ok {
			out = append(out, pod)
		}
	})
	return out, err
}

func (l podLister) Pods(namespace string) corelisters.PodNamespaceLister {
	return podLister{indexer: l.indexer, namespace: namespace}
}

func (l podLister) Get(name string) (*corev1.Pod, error) {
	obj, exists, err := l.indexer.GetByKey(cache.NewObjectName(l.namespace, name).String())
	if err != nil {
		return nil, err
	}
	pod, ok := Whole(obj).(*corev1.Pod)
	if !exists || !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("pod"), name)
	}
	return pod, nil
}

package cached

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// PodLister lists and gets the pods of indexer, a cache that may hold them
// compact, whole (Whole), as client-go's lister of a cache of pods does.
func PodLister(indexer cache.Indexer) corelisters.PodLister {
	return podLister{lister[*corev1.Pod]{indexer: indexer, resource: corev1.Resource("pod")}}
}

// PersistentVolumeClaimLister lists and gets the claims of indexer, a
// cache that may hold them compact, whole (Whole), as client-go's lister
// of a cache of claims does.
func PersistentVolumeClaimLister(indexer cache.Indexer) corelisters.PersistentVolumeClaimLister {
	return claimLister{lister[*corev1.PersistentVolumeClaim]{indexer: indexer, resource: corev1.Resource("persistentvolumeclaim")}}
}

// lister lists and gets the objects of type T of indexer, whole; of one
// namespace when namespace is not "", whose reads it limits to namespace.
type lister[T any] struct {
	indexer   cache.Indexer
	resource  schema.GroupResource
	namespace string
}

func (l lister[T]) List(selector labels.Selector) ([]T, error) {
	var out []T
	err := cache.ListAllByNamespace(l.indexer, l.namespace, selector, func(obj any) {
		if o, ok := Whole(obj).(T); ok {
			out = append(out, o)
		}
	})
	return out, err
}

func (l lister[T]) Get(name string) (T, error) {
	obj, exists, err := l.indexer.GetByKey(cache.NewObjectName(l.namespace, name).String())
	if err != nil {
		var none T
		return none, err
	}
	o, ok := Whole(obj).(T)
	if !exists || !ok {
		return o, apierrors.NewNotFound(l.resource, name)
	}
	return o, nil
}

func (l lister[T]) in(namespace string) lister[T] {
	l.namespace = namespace
	return l
}

type podLister struct{ lister[*corev1.Pod] }

func (l podLister) Pods(namespace string) corelisters.PodNamespaceLister {
	return podLister{l.in(namespace)}
}

type claimLister struct {
	lister[*corev1.PersistentVolumeClaim]
}

func (l claimLister) PersistentVolumeClaims(namespace string) corelisters.PersistentVolumeClaimNamespaceLister {
	return claimLister{l.in(namespace)}
}

//go:build e2e

package e2eutil

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// WatchPods calls seen with the pods of ns that selector selects, by name,
// as the API server held them: once as listed, then after each change a
// watch from that list reports, in order, so that no state between two
// changes goes unseen (as it could between two polls). A watch that ends
// or expires is followed by a list and a watch from it, and a state
// between the two is not seen. seen is called from one goroutine at a
// time and must not keep the map. stop ends the watch and returns once
// seen is no longer called.
func WatchPods(ns, selector string, seen func(pods map[string]*corev1.Pod)) (stop func(), err error) {
	if err := inProcessClient(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := podWatch{pods: inProcess.core.CoreV1().Pods(ns), selector: selector, seen: seen}
	if err := w.list(ctx); err != nil {
		cancel()
		return nil, err
	}
	var done sync.WaitGroup
	done.Go(func() {
		for ctx.Err() == nil {
			if w.follow(ctx) {
				continue
			}
			// Expired, refused or cut: list again, and watch from there.
			for ctx.Err() == nil && w.list(ctx) != nil {
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
	})
	return func() {
		cancel()
		done.Wait()
	}, nil
}

type podWatch struct {
	pods     typedcorev1.PodInterface
	selector string
	seen     func(map[string]*corev1.Pod)
	state    map[string]*corev1.Pod
	// version is the resource version the state is at.
	version string
}

// list reads the pods afresh and calls seen with them.
func (w *podWatch) list(ctx context.Context) error {
	l, err := w.pods.List(ctx, metav1.ListOptions{LabelSelector: w.selector})
	if err != nil {
		return err
	}
	w.state = make(map[string]*corev1.Pod, len(l.Items))
	for i := range l.Items {
		w.state[l.Items[i].Name] = &l.Items[i]
	}
	w.version = l.ResourceVersion
	w.seen(w.state)
	return nil
}

// follow watches from the state's version, calling seen after each change,
// until the watch ends: true when it ended as watches do after a while,
// with the state still good to watch on from; false when the state must
// be listed again.
func (w *podWatch) follow(ctx context.Context) bool {
	wi, err := w.pods.Watch(ctx, metav1.ListOptions{LabelSelector: w.selector, ResourceVersion: w.version, AllowWatchBookmarks: true})
	if err != nil {
		return false
	}
	defer wi.Stop()
	for e := range wi.ResultChan() {
		if e.Type == watch.Error {
			return false
		}
		pod, ok := e.Object.(*corev1.Pod)
		if !ok {
			return false
		}
		w.version = pod.ResourceVersion
		switch e.Type {
		case watch.Bookmark:
			continue
		case watch.Deleted:
			delete(w.state, pod.Name)
		default:
			w.state[pod.Name] = pod
		}
		w.seen(w.state)
	}
	return ctx.Err() == nil
}

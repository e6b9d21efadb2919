package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	clientset "github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// listWatch is one resource's LIST and WATCH, over raw client
// calls: neither the floor nor the measurement uses informers.
type listWatch struct {
	list  func(ctx context.Context) (items []runtime.Object, resourceVersion string, err error)
	watch func(ctx context.Context, resourceVersion string) (watch.Interface, error)
}

func databasesLW(c clientset.Interface, ns string) listWatch {
	dbs := func() interface {
		List(context.Context, metav1.ListOptions) (*dbv1alpha1.DatabaseList, error)
		Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
	} {
		return c.DbcontrollerV1alpha1().Databases(ns)
	}
	return listWatch{
		list: func(ctx context.Context) ([]runtime.Object, string, error) {
			l, err := dbs().List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, "", err
			}
			return objects(l.Items), l.ResourceVersion, nil
		},
		watch: func(ctx context.Context, rv string) (watch.Interface, error) {
			return dbs().Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		},
	}
}

func statefulSetsLW(c kubernetes.Interface, ns string) listWatch {
	sets := c.AppsV1().StatefulSets(ns)
	return managedLW(sets.List, sets.Watch, func(l *appsv1.StatefulSetList) (string, []runtime.Object) {
		return l.ResourceVersion, objects(l.Items)
	})
}

// claimsLW watches the claims of the StatefulSets statefulSetsLW watches:
// their templates carry the same labels.
func claimsLW(c kubernetes.Interface, ns string) listWatch {
	claims := c.CoreV1().PersistentVolumeClaims(ns)
	return managedLW(claims.List, claims.Watch, func(l *corev1.PersistentVolumeClaimList) (string, []runtime.Object) {
		return l.ResourceVersion, objects(l.Items)
	})
}

// objects are pointers to a list's items, as runtime.Objects.
func objects[T any, P interface {
	*T
	runtime.Object
}](items []T) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i := range items {
		out[i] = P(&items[i])
	}
	return out
}

// managedLW is the listWatch of the objects labelled as managed by this
// controller, through a typed client's List and Watch; items unpacks a
// list.
func managedLW[L any](list func(context.Context, metav1.ListOptions) (L, error), watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error),
	items func(L) (string, []runtime.Object)) listWatch {
	selector := names.ManagedSelector()
	return listWatch{
		list: func(ctx context.Context) ([]runtime.Object, string, error) {
			l, err := list(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return nil, "", err
			}
			rv, out := items(l)
			return out, rv, nil
		},
		watch: func(ctx context.Context, rv string) (watch.Interface, error) {
			return watchFn(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: rv, AllowWatchBookmarks: true})
		},
	}
}

// run lists, hands every item to handle as Added, and watches from there
// until ctx is done: after the server closes a watch it watches again from
// the last resourceVersion seen, and after 410 Gone it lists again. synced
// is closed once the first list has been handled.
func (lw listWatch) run(ctx context.Context, handle func(watch.EventType, runtime.Object), synced chan<- struct{}) {
	first := true
	for ctx.Err() == nil {
		items, rv, err := lw.list(ctx)
		if err != nil {
			logf("list: %v (retrying)", err)
			sleep(ctx, time.Second)
			continue
		}
		for _, it := range items {
			handle(watch.Added, it)
		}
		if first {
			close(synced)
			first = false
		}
		for ctx.Err() == nil {
			w, err := lw.watch(ctx, rv)
			if err != nil {
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					break
				}
				logf("watch: %v (retrying)", err)
				sleep(ctx, time.Second)
				continue
			}
			gone := false
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					if st, ok := ev.Object.(*metav1.Status); ok && st.Code == 410 {
						gone = true
					}
					break
				}
				if acc, err := meta.Accessor(ev.Object); err == nil {
					rv = acc.GetResourceVersion()
				}
				if ev.Type != watch.Bookmark {
					handle(ev.Type, ev.Object)
				}
			}
			w.Stop()
			if gone {
				break
			}
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// tracker records, from its own watches, when each Database of a namespace
// was first seen Running and when each StatefulSet was first seen, and first
// seen with every replica ready. It is the one clock both the controller
// and the floor are measured with.
type tracker struct {
	mu         sync.Mutex
	dbRunning  map[string]time.Time
	stsCreated map[string]time.Time
	stsReady   map[string]time.Time
	dbSeen     map[string]time.Time
	// lastStatus is each Database's status as last seen, and transitions
	// counts the status changes seen, by the state before and after.
	lastStatus  map[string]*dbv1alpha1.DatabaseStatus
	transitions map[transition]int
	// claimSeen is when each claim was first seen, and claimWait how long
	// after that it was first seen bound: how fast kube-controller-manager
	// bound the claims to their volumes in this run, which neither the
	// controller nor the floor does.
	claimSeen map[string]time.Time
	claimWait map[string]time.Duration
}

// transition is one change of a Database's status, named by its state
// (phase and the Ready condition's reason) before and after; from and to
// are equal when only other fields changed (ready replicas, a condition's
// message, another condition).
type transition struct{ from, to string }

// statusState names a status by its phase and the Ready condition's reason.
func statusState(s *dbv1alpha1.DatabaseStatus) string {
	if s == nil || s.Phase == "" {
		return "(none)"
	}
	if ready := meta.FindStatusCondition(s.Conditions, dbv1alpha1.ConditionReady); ready != nil {
		return fmt.Sprintf("%s/%s", s.Phase, ready.Reason)
	}
	return string(s.Phase)
}

func newTracker() *tracker {
	return &tracker{
		dbRunning:  map[string]time.Time{},
		stsCreated: map[string]time.Time{},
		stsReady:   map[string]time.Time{},
		dbSeen:     map[string]time.Time{},

		lastStatus:  map[string]*dbv1alpha1.DatabaseStatus{},
		transitions: map[transition]int{},
		claimSeen:   map[string]time.Time{},
		claimWait:   map[string]time.Duration{},
	}
}

// locked is a watch's handler that hands f the objects of type T, and when
// they were seen, under t's lock.
func locked[T runtime.Object](t *tracker, f func(obj T, now time.Time)) func(watch.EventType, runtime.Object) {
	return func(_ watch.EventType, obj runtime.Object) {
		o, ok := obj.(T)
		if !ok {
			return
		}
		now := time.Now()
		t.mu.Lock()
		defer t.mu.Unlock()
		f(o, now)
	}
}

// start begins watching ns and returns once every watch has listed.
func (t *tracker) start(ctx context.Context, db clientset.Interface, kube kubernetes.Interface, ns string) error {
	dbSynced, stsSynced, claimsSynced := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go databasesLW(db, ns).run(ctx, locked(t, func(d *dbv1alpha1.Database, now time.Time) {
		if _, ok := t.dbSeen[d.Name]; !ok {
			t.dbSeen[d.Name] = now
		}
		prev, seen := t.lastStatus[d.Name]
		if seen && !equality.Semantic.DeepEqual(prev, &d.Status) {
			t.transitions[transition{statusState(prev), statusState(&d.Status)}]++
		} else if !seen && d.Status.Phase != "" {
			// First seen with a status already: it changed from none.
			t.transitions[transition{statusState(nil), statusState(&d.Status)}]++
		}
		t.lastStatus[d.Name] = d.Status.DeepCopy()
		if d.Status.Phase == dbv1alpha1.PhaseRunning {
			if _, ok := t.dbRunning[d.Name]; !ok {
				t.dbRunning[d.Name] = now
			}
		}
	}), dbSynced)
	go statefulSetsLW(kube, ns).run(ctx, locked(t, func(s *appsv1.StatefulSet, now time.Time) {
		if _, ok := t.stsCreated[s.Name]; !ok {
			t.stsCreated[s.Name] = now
		}
		want := int32(1)
		if s.Spec.Replicas != nil {
			want = *s.Spec.Replicas
		}
		if s.Status.ReadyReplicas == want && s.Status.ObservedGeneration >= s.Generation {
			if _, ok := t.stsReady[s.Name]; !ok {
				t.stsReady[s.Name] = now
			}
		}
	}), stsSynced)
	go claimsLW(kube, ns).run(ctx, locked(t, func(c *corev1.PersistentVolumeClaim, now time.Time) {
		seen, ok := t.claimSeen[c.Name]
		if !ok {
			seen = now
			t.claimSeen[c.Name] = now
		}
		if _, bound := t.claimWait[c.Name]; !bound && c.Status.Phase == corev1.ClaimBound {
			t.claimWait[c.Name] = now.Sub(seen)
		}
	}), claimsSynced)
	for _, ch := range []chan struct{}{dbSynced, stsSynced, claimsSynced} {
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("tracker for %s did not sync: %w", ns, ctx.Err())
		case <-time.After(time.Minute):
			return fmt.Errorf("tracker for %s did not sync within a minute", ns)
		}
	}
	return nil
}

// statusTransitions returns the status changes seen, most frequent first.
func (t *tracker) statusTransitions() []transitionCount {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]transitionCount, 0, len(t.transitions))
	for tr, n := range t.transitions {
		out = append(out, transitionCount{tr, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n > out[j].n
		}
		if out[i].from != out[j].from {
			return out[i].from < out[j].from
		}
		return out[i].to < out[j].to
	})
	return out
}

type transitionCount struct {
	transition
	n int
}

func (t *tracker) runningCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.dbRunning)
}

// curve is a count over time: times[i] is when the count reached i+1.
type curve []time.Duration

// curves returns the tracker's records relative to t0, sorted.
func (t *tracker) curves(t0 time.Time) (running, stsCreated, stsReady curve) {
	t.mu.Lock()
	defer t.mu.Unlock()
	conv := func(m map[string]time.Time) curve {
		out := make(curve, 0, len(m))
		for _, at := range m {
			out = append(out, at.Sub(t0))
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	return conv(t.dbRunning), conv(t.stsCreated), conv(t.stsReady)
}

// claimWaits are how long each claim bound was, after it was first seen,
// shortest first.
func (t *tracker) claimWaits() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]time.Duration, 0, len(t.claimWait))
	for _, d := range t.claimWait {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// last is when the curve reached n, or -1 if it never did.
func (c curve) last(n int) time.Duration {
	if n <= 0 || len(c) < n {
		return -1
	}
	return c[n-1]
}

// at is the count reached by time d.
func (c curve) at(d time.Duration) int {
	return sort.Search(len(c), func(i int) bool { return c[i] > d })
}

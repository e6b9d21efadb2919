package reconcile

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/dbcontroller/database-controller/pkg/actiontest"
	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/drift"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/status"
)

func TestCreatesEverythingForANewDatabase(t *testing.T) {
	for _, eng := range []dbv1alpha1.Engine{"postgresql", "mysql", "mongodb"} {
		t.Run(string(eng), func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			version := map[dbv1alpha1.Engine]string{"postgresql": "16", "mysql": "8.4", "mongodb": "7.0"}[eng]
			db := newDatabase("orders", eng, version, 1)
			f.seed(db)

			f.expectNewDatabase(db)
			f.run(ctx, ref(db), synced)
		})
	}
}

func TestSteadyStateMakesNoWrites(t *testing.T) {
	for _, replicas := range []int32{1, 0} {
		t.Run(fmt.Sprintf("replicas=%d", replicas), func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", replicas)
			f.converged(db)
			// No actions and no events expected.
			f.run(ctx, ref(db), synced)
		})
	}
	t.Run("replicas=3, replicated", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 3)
		f.convergedReplicated(db)
		// One read: the credentials to ask the servers with, read once
		// per version of the Secret. No write, no event.
		f.expectGet(secretsResource, "default", "orders-credentials")
		f.calls = probes(0, 1, 2)
		f.run(ctx, ref(db), pollServers)
	})
}

func TestSteadyStateToleratesServerDefaultsAndOthersFields(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "mysql", "8.4", 1)
	sts, _, svc, _ := f.converged(db)
	// What the API server and other actors add must not look like drift.
	svc.Spec.ClusterIP = "10.0.0.12"
	svc.Spec.ClusterIPs = []string{"10.0.0.12"}
	svc.Spec.SessionAffinity = corev1.ServiceAffinityNone
	svc.Annotations["team"] = "payments"
	sts.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	sts.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	sts.Spec.Template.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	sts.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "now"}
	sts.Labels["added-by-someone"] = "yes"
	f.run(ctx, ref(db), synced)
}

func TestDriftIsRepaired(t *testing.T) {
	tests := []struct {
		name  string
		drift func(f *fixture, sts *appsv1.StatefulSet, headless, svc *corev1.Service)
		// expect registers the expected actions on the drifted fixture.
		expect func(f *fixture, db *dbv1alpha1.Database)
		event  string
	}{
		{
			name: "StatefulSet replicas edited",
			drift: func(f *fixture, sts *appsv1.StatefulSet, _, _ *corev1.Service) {
				sts.Spec.Replicas = ptr.To[int32](5)
				specEdited(sts)
			},
			expect: func(f *fixture, db *dbv1alpha1.Database) {
				f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
			},
			event: "Normal Updated Updated StatefulSet orders to match the Database spec",
		},
		{
			name: "StatefulSet image edited",
			drift: func(f *fixture, sts *appsv1.StatefulSet, _, _ *corev1.Service) {
				sts.Spec.Template.Spec.Containers[0].Image = "postgres:latest"
				specEdited(sts)
			},
			expect: func(f *fixture, db *dbv1alpha1.Database) {
				f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
			},
			event: "Normal Updated Updated StatefulSet orders to match the Database spec",
		},
		{
			name: "client Service port edited",
			drift: func(f *fixture, _ *appsv1.StatefulSet, _, svc *corev1.Service) {
				svc.Spec.Ports[0].Port = 15432
			},
			expect: func(f *fixture, db *dbv1alpha1.Database) {
				f.expectApply(servicesResource, "default", "orders", desired(t, db).Service)
			},
			event: "Normal Updated Updated Service orders to match the Database spec",
		},
		{
			name: "headless Service made non-headless selector edited",
			drift: func(f *fixture, _ *appsv1.StatefulSet, headless, _ *corev1.Service) {
				headless.Spec.Selector = map[string]string{"app": "other"}
			},
			expect: func(f *fixture, db *dbv1alpha1.Database) {
				f.expectApply(servicesResource, "default", "orders-headless", desired(t, db).HeadlessService)
			},
			event: "Normal Updated Updated Service orders-headless to match the Database spec",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 1)
			sts, headless, svc, _ := f.converged(db)
			tt.drift(f, sts, headless, svc)
			tt.expect(f, db)
			f.events = []string{tt.event}
			f.run(ctx, ref(db), synced)
		})
	}
}

// specEdited raises sts's generation, as the API server does with every
// change of a spec, and its observed generation, as the StatefulSet
// controller soon does.
func specEdited(sts *appsv1.StatefulSet) {
	sts.Generation++
	sts.Status.ObservedGeneration = sts.Generation
}

// A pass that found every child in place remembers it by their content
// (a StatefulSet's generation and metadata, another child's version); an
// edit after it makes new content, which is compared again and repaired,
// and so is a change of what is desired.
//
// A StatefulSet's status changes with every pod's progress, each change a
// new resourceVersion: a pass after one does not compare the StatefulSet
// again, as its generation says its spec is the one found covered. The
// case "status progressed" plants a spec change that keeps the generation
// (which the API server never does) to see that no comparison ran
// (notCompared); with the memory keyed by resourceVersion it is repaired.
func TestDriftAfterAPassThatFoundNone(t *testing.T) {
	for _, tt := range []struct {
		name        string
		change      func(f *fixture, db *dbv1alpha1.Database, sts *appsv1.StatefulSet)
		notCompared bool
		// rollsOut: the repair is of the pod template, which the
		// StatefulSet rolls out; the status says so.
		rollsOut bool
		// written is the generation the repair says the spec is at
		// (drift.WrittenGenerationAnnotation): its own when only metadata
		// is repaired, "" when the spec changes.
		written string
	}{
		{"status progressed", func(f *fixture, _ *dbv1alpha1.Database, sts *appsv1.StatefulSet) {
			progressed := sts.DeepCopy()
			progressed.ResourceVersion = "5"
			progressed.Spec.Template.Spec.EnableServiceLinks = nil // planted: desired sets false
			f.update(f.caches.StatefulSets, progressed)
		}, true, false, ""},
		{"StatefulSet image edited", func(f *fixture, _ *dbv1alpha1.Database, sts *appsv1.StatefulSet) {
			edited := sts.DeepCopy()
			edited.Spec.Template.Spec.Containers[0].Image = "postgres:latest"
			edited.ResourceVersion = "5"
			edited.Generation++ // as the API server does with every change of a spec
			f.update(f.caches.StatefulSets, edited)
		}, false, true, ""},
		{"StatefulSet label removed", func(f *fixture, _ *dbv1alpha1.Database, sts *appsv1.StatefulSet) {
			edited := sts.DeepCopy()
			delete(edited.Labels, names.LabelInstance)
			edited.ResourceVersion = "5" // metadata: the generation stays
			f.update(f.caches.StatefulSets, edited)
		}, false, false, "1"},
		{"StatefulSet's applied digest edited", func(f *fixture, _ *dbv1alpha1.Database, sts *appsv1.StatefulSet) {
			edited := sts.DeepCopy()
			edited.Annotations[drift.AppliedAnnotation] = "0123456789abcdef"
			edited.ResourceVersion = "5"
			f.update(f.caches.StatefulSets, edited)
		}, false, false, ""},
		{"StatefulSet's owner reference no longer blocks its owner's deletion", func(f *fixture, _ *dbv1alpha1.Database, sts *appsv1.StatefulSet) {
			edited := sts.DeepCopy()
			edited.OwnerReferences[0].BlockOwnerDeletion = ptr.To(false)
			edited.ResourceVersion = "5"
			f.update(f.caches.StatefulSets, edited)
		}, false, false, "1"},
		{"spec.resources set", func(f *fixture, db *dbv1alpha1.Database, _ *appsv1.StatefulSet) {
			changed := db.DeepCopy()
			changed.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
			changed.ResourceVersion = "11"
			f.update(f.databases, changed)
		}, false, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 1)
			sts, _, _, _ := f.convergedAtVersions(db)
			r, recorder := f.newReconciler()
			f.syncAndCheck(ctx, r, recorder, ref(db), synced)

			tt.change(f, db, sts)
			if tt.notCompared {
				r.settled.Remove(ref(db))
				f.syncAndCheck(ctx, r, recorder, ref(db), synced)
				return
			}
			want := db.DeepCopy()
			if obj, ok, _ := f.databases.GetByKey("default/orders"); ok {
				want = obj.(*dbv1alpha1.Database)
			}
			f.expectApplyWritten(desired(t, want).StatefulSet, tt.written)
			f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
			if tt.rollsOut {
				f.expectStatusUpdate(want, actiontest.WantStatus(want, dbv1alpha1.PhaseUpdating, 1, 1, "16",
					metav1.ConditionFalse, status.ReasonReplicasNotReady, "1/1 replicas are ready",
					metav1.ConditionTrue, status.ReasonRollingUpdate, "rolling out: 1/1 replicas updated, 1 ready"))
			}
			f.syncAndCheck(ctx, r, recorder, ref(db), synced)
		})
	}
}

// Two kinds of drift that a comparison of the desired fields alone cannot
// see: a field the new spec no longer sets, and a field the controller sets
// to false that someone else cleared. Each is repaired with one apply.
func TestDriftTheFieldComparisonAloneMisses(t *testing.T) {
	t.Run("spec.resources removed", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		db.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
		f.converged(db)
		db.Spec.Resources = nil
		db.Generation = 2
		f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
		st := db.Status.DeepCopy()
		st.ObservedGeneration = 2
		for i := range st.Conditions {
			st.Conditions[i].ObservedGeneration = 2
		}
		f.expectStatusUpdate(db, *st)
		f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
		f.run(ctx, ref(db), synced)
	})
	for _, tt := range []struct {
		name  string
		clear func(*appsv1.StatefulSet)
	}{
		{"allowPrivilegeEscalation: false cleared", func(sts *appsv1.StatefulSet) {
			sts.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
		}},
		{"automountServiceAccountToken: false cleared", func(sts *appsv1.StatefulSet) {
			sts.Spec.Template.Spec.AutomountServiceAccountToken = nil
		}},
		{"enableServiceLinks: false cleared", func(sts *appsv1.StatefulSet) {
			sts.Spec.Template.Spec.EnableServiceLinks = nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			db := newDatabase("orders", "postgresql", "16", 1)
			sts, _, _, _ := f.converged(db)
			tt.clear(sts)
			specEdited(sts)
			f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
			f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
			f.run(ctx, ref(db), synced)
		})
	}
}

func TestDeletedServiceIsRecreated(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.converged(db)
	// The client Service is gone from the cache and from the API server.
	f.serviceLister = f.serviceLister[:1]
	f.kubeobjects = f.kubeobjects[:len(f.kubeobjects)-2]
	f.kubeobjects = append(f.kubeobjects, f.secretLister[0])
	f.expectCreate(servicesResource, expectedService(t, db))
	f.events = []string{"Normal Created Created Service orders"}
	f.run(ctx, ref(db), synced)
}

func TestScaling(t *testing.T) {
	tests := []struct {
		name       string
		from, to   int32
		wantStatus func(db *dbv1alpha1.Database) dbv1alpha1.DatabaseStatus
	}{
		{
			name: "up from 1 to 3", from: 1, to: 3,
			wantStatus: func(db *dbv1alpha1.Database) dbv1alpha1.DatabaseStatus {
				return wantStatus(db, "Updating", 1, 1, "7.0",
					"False", "ReplicasNotReady", "1/3 replicas are ready",
					"True", "Scaling", "scaling from 1 to 3 replicas: 1 ready")
			},
		},
		{
			name: "down from 3 to 0", from: 3, to: 0,
			wantStatus: func(db *dbv1alpha1.Database) dbv1alpha1.DatabaseStatus {
				return wantStatus(db, "Updating", 3, 3, "7.0",
					"False", "Stopping", "stopping: 3 replicas still running",
					"True", "Stopping", "stopping: 3 replicas still running")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			// MongoDB's replicas (of a Database stored before the API
			// refused more than one) are independent servers: this is the
			// StatefulSet's scaling alone (TestReplication* cover
			// replicated Databases, which have a primary to keep).
			db := newDatabase("orders", "mongodb", "7.0", tt.from)
			f.converged(db)
			db.Spec.Replicas = ptr.To(tt.to)
			db.Generation = 2

			f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
			st := tt.wantStatus(db)
			st.FeatureCompatibilityVersion = "7.0" // its data's, recorded when it first ran
			f.expectStatusUpdate(db, st)
			f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
			f.run(ctx, ref(db), synced)
		})
	}
}

func TestStoppedWhenScaledToZeroSettles(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	sts, _, _, _ := f.converged(db)
	db.Spec.Replicas = ptr.To[int32](0)
	db.Generation = 2
	// As the controller applied it for replicas 0: with that spec's digest.
	sts.Spec.Replicas = ptr.To[int32](0)
	sts.Annotations = expectedStatefulSet(t, db).Annotations
	rolledOut(sts, 0)

	st := wantStatus(db, "Stopped", 0, 0, "16",
		"False", "Stopped", "replicas is 0: the database is stopped and its data is kept",
		"False", "Converged", "the Database matches its spec")
	keepTransitionTime(&st, "Progressing")
	f.expectStatusUpdate(db, st)
	f.run(ctx, ref(db), synced)
}

func TestForeignObjectIsLeftUntouched(t *testing.T) {
	t.Run("visible in the cache", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		foreign := expectedStatefulSet(t, db)
		foreign.OwnerReferences = nil
		f.seed(db, foreign)

		f.expectCreate(secretsResource, expectedSecret(t, db, testPassword))
		f.expectCreate(servicesResource, expectedHeadless(t, db))
		f.expectCreate(servicesResource, expectedService(t, db))
		msg := "StatefulSet default/orders already exists and is not controlled by this Database; it is left untouched: delete or rename it, or give the Database another name"
		f.expectStatusUpdate(db, wantStatus(db, "Failed", 0, 0, "",
			"False", "ResourceConflict", msg, "False", "ResourceConflict", msg))
		f.events = []string{
			"Normal Created Created Secret orders-credentials, Service orders-headless, Service orders",
			"Warning ResourceConflict " + msg,
		}
		f.run(ctx, ref(db), needsPersonRecheck)
	})

	t.Run("outside the filtered cache", func(t *testing.T) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		f.seed(db)
		foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "default"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
		f.kubeobjects = append(f.kubeobjects, foreign)

		f.expectCreate(secretsResource, expectedSecret(t, db, testPassword))
		f.expectCreate(servicesResource, expectedHeadless(t, db))
		f.expectCreate(servicesResource, expectedService(t, db))
		f.expectGet(servicesResource, "default", "orders")
		msg := "Service default/orders already exists and is not controlled by this Database; it is left untouched: delete or rename it, or give the Database another name"
		f.expectStatusUpdate(db, wantStatus(db, "Failed", 0, 0, "",
			"False", "ResourceConflict", msg, "False", "ResourceConflict", msg))
		f.events = []string{
			"Normal Created Created Secret orders-credentials, Service orders-headless",
			"Warning ResourceConflict " + msg,
		}
		f.run(ctx, ref(db), needsPersonRecheck)
	})
}

// A Database blocked by an object it does not own is looked at again (the
// loop paces the looks: TestRecheckIsPacedByACappedBackoff), with one read
// per look and no failed create; once the object goes, the next look
// creates the child.
func TestConflictIsRecheckedWithOneRead(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.seed(db, expectedSecret(t, db, "pw"), expectedHeadless(t, db))
	foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "default"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	f.kubeobjects = append(f.kubeobjects, foreign)
	r, recorder := f.newReconciler()

	// The first look: a create that fails, and a read.
	msg := "Service default/orders already exists and is not controlled by this Database; it is left untouched: delete or rename it, or give the Database another name"
	st := wantStatus(db, "Failed", 0, 0, "", "False", "ResourceConflict", msg, "False", "ResourceConflict", msg)
	f.expectCreate(servicesResource, expectedService(t, db))
	f.expectGet(servicesResource, "default", "orders")
	f.expectStatusUpdate(db, st)
	f.events = []string{"Warning ResourceConflict " + msg}
	f.syncAndCheck(ctx, r, recorder, ref(db), needsPersonRecheck)

	// The status is stored. The next looks: one read each, nothing written.
	stored := db.DeepCopy()
	stored.Status = st
	if err := f.databases.Update(stored); err != nil {
		t.Fatal(err)
	}
	f.actions, f.kubeactions, f.events = nil, nil, nil
	f.expectGet(servicesResource, "default", "orders")
	for range 2 {
		f.syncAndCheck(ctx, r, recorder, ref(db), needsPersonRecheck)
	}

	// The foreign Service is deleted: the next look creates ours.
	if err := f.kubeclient.CoreV1().Services("default").Delete(ctx, "orders", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.kubeactions = nil
	f.expectGet(servicesResource, "default", "orders")
	f.expectCreate(servicesResource, expectedService(t, db))
	f.expectCreate(statefulSetsResource, expectedStatefulSet(t, db))
	st = actiontest.Provisioning(db)
	f.expectStatusUpdate(db, st)
	f.events = []string{"Normal Created Created Service orders, StatefulSet orders"}
	f.syncAndCheck(ctx, r, recorder, ref(db), synced)
}

func TestChildrenNotYetInCacheAreNotCreatedTwice(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.seed(db)
	r, recorder := f.newReconciler()
	// The first sync creates everything.
	if _, err := r.Sync(ctx, db); err != nil {
		t.Fatal(err)
	}
	actiontest.Drain(recorder)
	// A second sync before the informers saw the creates writes nothing: no
	// duplicate create, no status flip back to Pending. What the first pass
	// read has not changed: it is skipped.
	f.syncAndCheck(ctx, r, recorder, ref(db), skipped)
	// A full pass (the settled pass forgotten, as after SettledTTL) waits
	// for the cache to show the Secret it created, and writes nothing.
	r.settled.Remove(ref(db))
	f.syncAndCheck(ctx, r, recorder, ref(db), waiting)

	// How long the expectations wait, and how they are swept, is tested
	// directly in expectations_test.go.
}

// A namespace being deleted refuses every create: the pass stops there,
// and writes no status and no event; the loop neither retries nor logs it
// as an error (TestOutcomesAreSorted).
func TestNamespaceBeingDeletedIsNoError(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	db := newDatabase("orders", "postgresql", "16", 1)
	f.seed(db)
	r, recorder := f.newReconciler()
	f.kubeclient.PrependReactor("create", "*", func(a core.Action) (bool, runtime.Object, error) {
		return true, nil, actiontest.NamespaceTerminating(a.GetResource().GroupResource(), "")
	})
	f.expectCreate(secretsResource, expectedSecret(t, db, testPassword))
	f.syncAndCheck(ctx, r, recorder, ref(db), namespaceDeleting)
}

func TestStampedDigest(t *testing.T) {
	stamped := corev1ac.Service("orders", "default").WithAnnotations(map[string]string{drift.AppliedAnnotation: "0123456789abcdef"})
	for _, tc := range []struct {
		name    string
		desired any
		want    string
	}{
		{"stamped", stamped, "0123456789abcdef"},
		{"not stamped", corev1ac.Service("orders", "default"), ""},
		{"no metadata", &corev1ac.ServiceApplyConfiguration{}, ""},
		{"nil", (*corev1ac.ServiceApplyConfiguration)(nil), ""},
		{"not an apply configuration", &corev1.Service{}, ""},
	} {
		if got := stampedDigest(tc.desired); got != tc.want {
			t.Errorf("%s: stampedDigest = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestContentVersion(t *testing.T) {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "orders", UID: "u1", ResourceVersion: "7", Generation: 3,
		Labels: map[string]string{"a": "1", "b": "2"}, Annotations: map[string]string{drift.AppliedAnnotation: "d1"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Database", Name: "orders", UID: "o1", Controller: ptr.To(true)}}}}
	base := contentVersion(sts)
	same := func(name string, change func(*appsv1.StatefulSet)) {
		t.Helper()
		c := sts.DeepCopy()
		change(c)
		if got := contentVersion(c); got != base {
			t.Errorf("%s: content version %q, want %q as before", name, got, base)
		}
	}
	differs := func(name string, change func(*appsv1.StatefulSet)) {
		t.Helper()
		c := sts.DeepCopy()
		change(c)
		if got := contentVersion(c); got == base {
			t.Errorf("%s: content version %q unchanged", name, got)
		}
	}
	same("status changed", func(s *appsv1.StatefulSet) { s.ResourceVersion = "8"; s.Status.ReadyReplicas = 1 })
	same("labels in another order", func(s *appsv1.StatefulSet) { s.Labels = map[string]string{"b": "2", "a": "1"} })
	differs("spec changed", func(s *appsv1.StatefulSet) { s.Generation = 4 })
	differs("label value", func(s *appsv1.StatefulSet) { s.Labels["a"] = "2" })
	differs("label key and value swapped", func(s *appsv1.StatefulSet) { s.Labels = map[string]string{"1": "a", "b": "2"} })
	differs("label moved to annotations", func(s *appsv1.StatefulSet) { delete(s.Labels, "a"); s.Annotations["a"] = "1" })
	differs("annotation removed", func(s *appsv1.StatefulSet) { s.Annotations = nil })
	differs("owner no longer controller", func(s *appsv1.StatefulSet) { s.OwnerReferences[0].Controller = nil })
	differs("finalizer", func(s *appsv1.StatefulSet) { s.Finalizers = []string{"example.com/hold"} })
	if got := contentVersion(&appsv1.StatefulSet{}); got != "" {
		t.Errorf("an object never read from an API server: content version %q, want none", got)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "orders", ResourceVersion: "7", Generation: 3}}
	if got := contentVersion(svc); got != "7" {
		t.Errorf("a Service's content version is %q, want its resourceVersion", got)
	}
}

// The caches hold StatefulSets as the controller's informer cache does,
// stripped of most of their spec (builder.StripTemplates): the
// drift comparison reads the API server's copy when it has not found the
// StatefulSet's generation and metadata covered yet, and not again after,
// nor after a write that answered with what is desired.
func TestStrippedStatefulSetIsReadFromTheAPIServerToCompare(t *testing.T) {
	stsGVR := appsv1.SchemeGroupVersion.WithResource("statefulsets")
	newStripped := func(t *testing.T) (context.Context, *fixture) {
		_, ctx := ktesting.NewTestContext(t)
		f := newFixture(t)
		f.stripTemplates = true
		return ctx, f
	}
	// setUp seeds a converged Database, changed first by change when not nil.
	setUp := func(t *testing.T, change func(*dbv1alpha1.Database)) (context.Context, *fixture, *dbv1alpha1.Database, *appsv1.StatefulSet, *Reconciler, *record.FakeRecorder) {
		ctx, f := newStripped(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		if change != nil {
			change(db)
		}
		sts, _, _, _ := f.convergedAtVersions(db)
		r, recorder := f.newReconciler()
		return ctx, f, db, sts, r, recorder
	}
	again := func(f *fixture, r *Reconciler, db *dbv1alpha1.Database) {
		r.settled.Remove(ref(db))
		f.actions, f.kubeactions, f.events = nil, nil, nil
	}
	// madeBefore makes sts one that a controller that did not say which
	// generation it wrote made (drift.WrittenGenerationAnnotation), in the
	// cache and on the API server.
	madeBefore := func(f *fixture, sts *appsv1.StatefulSet) {
		older := sts.DeepCopy()
		delete(older.Annotations, drift.WrittenGenerationAnnotation)
		f.update(f.caches.StatefulSets, older)
	}

	t.Run("written by this controller and unchanged since: no read", func(t *testing.T) {
		ctx, f, db, sts, r, recorder := setUp(t, nil)
		if sts.Annotations[drift.WrittenGenerationAnnotation] != "1" || sts.Generation != 1 {
			t.Fatalf("the StatefulSet as created says %q at generation %d", sts.Annotations[drift.WrittenGenerationAnnotation], sts.Generation)
		}
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	})

	t.Run("written by this controller, its spec changed since: read and repaired", func(t *testing.T) {
		ctx, f, db, sts, r, recorder := setUp(t, nil)
		edited := sts.DeepCopy()
		edited.Spec.Template.Spec.Containers[0].ReadinessProbe = nil
		edited.ResourceVersion = "5"
		edited.Generation++
		f.update(f.caches.StatefulSets, edited)
		f.expectGet(statefulSetsResource, "default", "orders")
		f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
		f.expectStatusUpdate(db, actiontest.WantStatus(db, dbv1alpha1.PhaseUpdating, 1, 1, "16",
			metav1.ConditionFalse, status.ReasonReplicasNotReady, "1/1 replicas are ready",
			metav1.ConditionTrue, status.ReasonRollingUpdate, "rolling out: 1/1 replicas updated, 1 ready"))
		f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	})

	t.Run("written by this controller for another desired state: read and repaired", func(t *testing.T) {
		ctx, f, db, _, r, recorder := setUp(t, nil)
		changed := db.DeepCopy()
		changed.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
		changed.ResourceVersion = "11"
		f.update(f.databases, changed)
		f.expectGet(statefulSetsResource, "default", "orders")
		f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, changed))
		f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	})

	t.Run("written by this controller, a label removed since: repaired with no read", func(t *testing.T) {
		ctx, f, db, sts, r, recorder := setUp(t, nil)
		edited := sts.DeepCopy()
		delete(edited.Labels, names.LabelInstance)
		edited.ResourceVersion = "5" // metadata: the generation stays
		f.update(f.caches.StatefulSets, edited)
		f.expectApplyWritten(desired(t, db).StatefulSet, "1")
		f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	})

	t.Run("unchanged: one read, then none", func(t *testing.T) {
		ctx, f, db, sts, r, recorder := setUp(t, nil)
		madeBefore(f, sts)
		f.expectGet(statefulSetsResource, "default", "orders")
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)
		again(f, r, db)
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	})

	// The plan keeps the claim template of the StatefulSet observed, which
	// cannot change: read from the stripped copy, it must be the same.
	t.Run("a storage class: one read, no write", func(t *testing.T) {
		ctx, f, db, sts, r, recorder := setUp(t, func(db *dbv1alpha1.Database) { db.Spec.Storage.StorageClassName = ptr.To("fast") })
		if class := sts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName; class == nil || *class != "fast" {
			t.Fatalf("the claim template's class is %v, want fast", class)
		}
		madeBefore(f, sts)
		f.expectGet(statefulSetsResource, "default", "orders")
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	})

	t.Run("a field the cache does not keep removed: read and repaired, then no read", func(t *testing.T) {
		ctx, f, db, sts, r, recorder := setUp(t, nil)
		madeBefore(f, sts)
		f.expectGet(statefulSetsResource, "default", "orders")
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)

		edited := sts.DeepCopy()
		edited.Spec.Template.Spec.Containers[0].ReadinessProbe = nil
		edited.ResourceVersion = "5"
		edited.Generation++
		f.update(f.caches.StatefulSets, edited)
		again(f, r, db)
		f.expectGet(statefulSetsResource, "default", "orders")
		f.expectApply(statefulSetsResource, "default", "orders", desiredStatefulSet(t, db))
		st := actiontest.WantStatus(db, dbv1alpha1.PhaseUpdating, 1, 1, "16",
			metav1.ConditionFalse, status.ReasonReplicasNotReady, "1/1 replicas are ready",
			metav1.ConditionTrue, status.ReasonRollingUpdate, "rolling out: 1/1 replicas updated, 1 ready")
		f.expectStatusUpdate(db, st)
		f.events = []string{"Normal Updated Updated StatefulSet orders to match the Database spec"}
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)
		stored := db.DeepCopy()
		stored.Status, stored.ResourceVersion = st, "11"
		f.update(f.databases, stored)

		// The informer brings the answer of the apply: covered already.
		applied, err := f.kubeclient.Tracker().Get(stsGVR, "default", "orders")
		if err != nil {
			t.Fatal(err)
		}
		if applied.(*appsv1.StatefulSet).Spec.Template.Spec.Containers[0].ReadinessProbe == nil {
			t.Fatal("the apply did not put the probe back")
		}
		f.update(f.caches.StatefulSets, applied)
		again(f, r, db)
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	})

	t.Run("created: remembered from the create's answer, no read", func(t *testing.T) {
		ctx, f := newStripped(t)
		db := newDatabase("orders", "postgresql", "16", 1)
		f.seed(db)
		r, recorder := f.newReconciler()
		// As an API server does, and the fake does not.
		f.kubeclient.PrependReactor("create", "statefulsets", func(a core.Action) (bool, runtime.Object, error) {
			a.(core.CreateAction).GetObject().(metav1.Object).SetResourceVersion("1")
			return false, nil, nil
		})
		f.expectNewDatabase(db)
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)

		// The informers bring what was created, as the API server holds it.
		for _, c := range []struct {
			gvr   schema.GroupVersionResource
			name  string
			cache cache.Indexer
		}{
			{corev1.SchemeGroupVersion.WithResource("secrets"), "orders-credentials", f.caches.Secrets},
			{corev1.SchemeGroupVersion.WithResource("services"), "orders-headless", f.caches.Services},
			{corev1.SchemeGroupVersion.WithResource("services"), "orders", f.caches.Services},
			{stsGVR, "orders", f.caches.StatefulSets},
		} {
			created, err := f.kubeclient.Tracker().Get(c.gvr, "default", c.name)
			if err != nil {
				t.Fatal(err)
			}
			f.add(c.cache, created)
		}
		again(f, r, db)
		f.syncAndCheck(ctx, r, recorder, ref(db), synced)
	})

	t.Run("gone from the API server: looked at again", func(t *testing.T) {
		ctx, f, db, sts, r, recorder := setUp(t, nil)
		madeBefore(f, sts)
		if err := f.kubeclient.Tracker().Delete(stsGVR, "default", "orders"); err != nil {
			t.Fatal(err)
		}
		f.expectGet(statefulSetsResource, "default", "orders")
		f.syncAndCheck(ctx, r, recorder, ref(db), transient)
	})

	t.Run("another owner's on the API server: left untouched", func(t *testing.T) {
		ctx, f, db, sts, r, recorder := setUp(t, nil)
		madeBefore(f, sts)
		taken := sts.DeepCopy()
		delete(taken.Annotations, drift.WrittenGenerationAnnotation)
		taken.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "other", UID: "other-uid", Controller: ptr.To(true)}}
		if err := f.kubeclient.Tracker().Update(stsGVR, taken, "default"); err != nil {
			t.Fatal(err)
		}
		f.expectGet(statefulSetsResource, "default", "orders")
		msg := "StatefulSet default/orders already exists and is not controlled by this Database; it is left untouched: delete or rename it, or give the Database another name"
		st := actiontest.WantStatus(db, dbv1alpha1.PhaseFailed, 1, 1, "16", metav1.ConditionFalse, status.ReasonResourceConflict, msg,
			metav1.ConditionFalse, status.ReasonResourceConflict, msg)
		// Progressing was False (converged) already.
		st.Conditions[1].LastTransitionTime = db.Status.Conditions[1].LastTransitionTime
		f.expectStatusUpdate(db, st)
		f.events = []string{"Warning ResourceConflict " + msg}
		f.syncAndCheck(ctx, r, recorder, ref(db), needsPersonRecheck)
	})
}

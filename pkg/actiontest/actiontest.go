// Package actiontest checks what a piece of the controller did against fake
// clientsets and fake database servers: the exact, ordered API actions of
// each clientset, the events it emitted, and the SQL calls it made. Every
// fixture of the module (the loop's in package main, the reconciler's, the
// backup runner's) checks through it, so that they all mean the same by
// "the same action".
package actiontest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

// The resources the controller writes.
var (
	Secrets         = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	Events          = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	Services        = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	Pods            = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	Claims          = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	StatefulSets    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	Jobs            = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	Budgets         = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
	Databases       = schema.GroupVersionResource{Group: "dbcontroller.io", Version: "v1alpha1", Resource: "databases"}
	DatabaseBackups = schema.GroupVersionResource{Group: "dbcontroller.io", Version: "v1alpha1", Resource: "databasebackups"}
)

// Create is the create of obj, in obj's namespace.
func Create(resource schema.GroupVersionResource, obj runtime.Object) core.Action {
	return core.NewCreateAction(resource, obj.(metav1.Object).GetNamespace(), obj)
}

// DryRunCreate is a create of obj that only asks whether the API server
// would take it.
func DryRunCreate(resource schema.GroupVersionResource, obj runtime.Object) core.Action {
	return core.NewCreateActionWithOptions(resource, obj.(metav1.Object).GetNamespace(), obj,
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
}

// Get is a read of one object from the API server.
func Get(resource schema.GroupVersionResource, namespace, name string) core.Action {
	return core.NewGetAction(resource, namespace, name)
}

// List is a list of the objects of resource in namespace that match the
// field selector fieldSelector.
func List(resource schema.GroupVersionResource, namespace, fieldSelector string) core.Action {
	return core.NewListActionWithOptions(resource, schema.GroupVersionKind{}, namespace, metav1.ListOptions{FieldSelector: fieldSelector})
}

// ListLabelled is a list of the objects of resource in namespace that
// carry the labels labelSelector selects.
func ListLabelled(resource schema.GroupVersionResource, namespace, labelSelector string) core.Action {
	return core.NewListActionWithOptions(resource, schema.GroupVersionKind{}, namespace, metav1.ListOptions{LabelSelector: labelSelector})
}

// Patch is a patch of one object, of patchType.
func Patch(resource schema.GroupVersionResource, namespace, name string, patchType types.PatchType, patch []byte) core.Action {
	return core.NewPatchAction(resource, namespace, name, patchType, patch)
}

// Apply is a server-side apply of an apply configuration (or any value
// that marshals as one).
func Apply(t testing.TB, resource schema.GroupVersionResource, namespace, name string, applyConfiguration any) core.Action {
	t.Helper()
	return core.NewPatchAction(resource, namespace, name, types.ApplyPatchType, marshal(t, applyConfiguration))
}

// ApplyStatus is a server-side apply of an object's status subresource.
func ApplyStatus(t testing.TB, resource schema.GroupVersionResource, namespace, name string, body any) core.Action {
	t.Helper()
	return core.NewPatchSubresourceAction(resource, namespace, name, types.ApplyPatchType, marshal(t, body), "status")
}

// UpdateStatus is an update of obj's status subresource.
func UpdateStatus(resource schema.GroupVersionResource, obj runtime.Object) core.Action {
	return core.NewUpdateSubresourceAction(resource, "status", obj.(metav1.Object).GetNamespace(), obj)
}

// Delete is a delete of one object, with options.
func Delete(resource schema.GroupVersionResource, namespace, name string, options metav1.DeleteOptions) core.Action {
	return core.NewDeleteActionWithOptions(resource, namespace, name, options)
}

// DeleteUID is a delete of one object that must still have uid.
func DeleteUID(resource schema.GroupVersionResource, namespace, name string, uid types.UID) core.Action {
	return Delete(resource, namespace, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Writes drops the list and watch calls of informers from actions: what the
// controller reads by list or watch is its caches, never the pass's work.
func Writes(actions []core.Action) []core.Action {
	var ret []core.Action
	for _, action := range actions {
		if action.GetVerb() == "list" || action.GetVerb() == "watch" {
			continue
		}
		ret = append(ret, action)
	}
	return ret
}

// CheckActions compares the actions of one clientset (named which), list
// and watch calls dropped, with the expected ones, one by one and in order:
// the same verb on the same resource and subresource, and the same object,
// patch, name or options.
func CheckActions(t testing.TB, which string, expected, actual []core.Action) {
	t.Helper()
	CheckAllActions(t, which, expected, Writes(actual))
}

// CheckAllActions is CheckActions for a clientset no informer reads: its
// lists are the code's own reads, and compared too.
func CheckAllActions(t testing.TB, which string, expected, actual []core.Action) {
	t.Helper()
	for i, action := range actual {
		if i >= len(expected) {
			t.Errorf("%s: %d unexpected actions: %s", which, len(actual)-len(expected), Describe(actual[i:]))
			break
		}
		checkAction(t, which, i, expected[i], action)
	}
	if len(expected) > len(actual) {
		t.Errorf("%s: %d additional expected actions: %s", which, len(expected)-len(actual), Describe(expected[len(actual):]))
	}
}

// Describe names actions in one line: "create secrets/, patch databases/status".
func Describe(actions []core.Action) string {
	var parts []string
	for _, a := range actions {
		parts = append(parts, fmt.Sprintf("%s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource()))
	}
	return strings.Join(parts, ", ")
}

func checkAction(t testing.TB, which string, i int, expected, actual core.Action) {
	t.Helper()
	if !(expected.Matches(actual.GetVerb(), actual.GetResource().Resource) && actual.GetSubresource() == expected.GetSubresource()) {
		t.Errorf("%s: action %d is %s, want %s", which, i, Describe([]core.Action{actual}), Describe([]core.Action{expected}))
		return
	}
	if reflect.TypeOf(actual) != reflect.TypeOf(expected) {
		t.Errorf("%s: action %d %s has type %T, want %T", which, i, actual.GetVerb(), actual, expected)
		return
	}
	switch a := actual.(type) {
	case core.CreateActionImpl:
		e := expected.(core.CreateActionImpl)
		if want := e.GetObject(); !equality.Semantic.DeepEqual(want, a.GetObject()) {
			t.Errorf("%s: create %s: object differs:\n got: %s\nwant: %s", which, a.GetResource().Resource, JSON(a.GetObject()), JSON(want))
		}
		// A dry run creates nothing: it is never the same as a create.
		if got, want := a.GetCreateOptions().DryRun, e.GetCreateOptions().DryRun; !slices.Equal(got, want) {
			t.Errorf("%s: create %s: dry run %q, want %q", which, a.GetResource().Resource, got, want)
		}
	case core.UpdateActionImpl:
		if want := expected.(core.UpdateActionImpl).GetObject(); !equality.Semantic.DeepEqual(want, a.GetObject()) {
			t.Errorf("%s: update %s: object differs:\n got: %s\nwant: %s", which, a.GetResource().Resource, JSON(a.GetObject()), JSON(want))
		}
	case core.PatchActionImpl:
		e := expected.(core.PatchActionImpl)
		if a.GetName() != e.GetName() || a.GetPatchType() != e.GetPatchType() {
			t.Errorf("%s: patch: got %s %s, want %s %s", which, a.GetPatchType(), a.GetName(), e.GetPatchType(), e.GetName())
		}
		var got, want any
		_ = json.Unmarshal(a.GetPatch(), &got)
		_ = json.Unmarshal(e.GetPatch(), &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: patch %s: differs:\n got: %s\nwant: %s", which, a.GetName(), a.GetPatch(), e.GetPatch())
		}
	case core.GetActionImpl:
		if e := expected.(core.GetActionImpl); a.GetName() != e.GetName() || a.GetNamespace() != e.GetNamespace() {
			t.Errorf("%s: get: got %s/%s, want %s/%s", which, a.GetNamespace(), a.GetName(), e.GetNamespace(), e.GetName())
		}
	case core.ListActionImpl:
		e := expected.(core.ListActionImpl)
		got, want := a.GetListRestrictions(), e.GetListRestrictions()
		if a.GetNamespace() != e.GetNamespace() || got.Fields.String() != want.Fields.String() || got.Labels.String() != want.Labels.String() {
			t.Errorf("%s: list %s: got namespace %s fields %q labels %q, want %s %q %q", which, a.GetResource().Resource,
				a.GetNamespace(), got.Fields, got.Labels, e.GetNamespace(), want.Fields, want.Labels)
		}
	case core.DeleteActionImpl:
		e := expected.(core.DeleteActionImpl)
		if a.GetName() != e.GetName() {
			t.Errorf("%s: delete: got %s, want %s", which, a.GetName(), e.GetName())
		}
		if got, want := a.GetDeleteOptions(), e.GetDeleteOptions(); !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: delete %s: options %+v, want %+v", which, a.GetName(), got, want)
		}
	default:
		t.Errorf("%s: unchecked action %s", which, Describe([]core.Action{actual}))
	}
}

// JSON is v as JSON, for messages.
func JSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// CheckEvents drains recorder and compares the events it holds with the
// expected ones, in order: each as "Type Reason Message", matched on its
// start, so that a long message may be named by its beginning.
func CheckEvents(t testing.TB, expected []string, recorder *record.FakeRecorder) {
	t.Helper()
	got := Drain(recorder)
	if len(got) != len(expected) {
		t.Errorf("events: got %d %q, want %d %q", len(got), got, len(expected), expected)
		return
	}
	for i := range expected {
		if !strings.HasPrefix(got[i], expected[i]) {
			t.Errorf("event %d: got %q, want one starting with %q", i, got[i], expected[i])
		}
	}
}

// Drain returns the events recorder holds, and empties it.
func Drain(recorder *record.FakeRecorder) []string {
	var got []string
	for {
		select {
		case e := <-recorder.Events:
			got = append(got, e)
		default:
			return got
		}
	}
}

// CheckCalls compares the calls made to fake servers with the expected
// ones, in order, except that a run of probes in a row is compared as a
// set: the controller asks every server at once.
func CheckCalls(t testing.TB, which string, expected, actual []string) {
	t.Helper()
	if got, want := probesSorted(actual), probesSorted(expected); !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", which, got, want)
	}
}

func probesSorted(calls []string) []string {
	out := slices.Clone(calls)
	for i := 0; i < len(out); {
		j := i
		for j < len(out) && strings.HasPrefix(out[j], "probe ") {
			j++
		}
		if j == i {
			i++
			continue
		}
		slices.Sort(out[i:j])
		i = j
	}
	return out
}

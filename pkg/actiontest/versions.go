package actiontest

import (
	"encoding/json"
	"errors"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
)

// reactingClientset is a fake clientset: both the generated one and
// client-go's.
type reactingClientset interface {
	PrependReactor(verb, resource string, reaction core.ReactionFunc)
	Tracker() core.ObjectTracker
}

// ResourceVersions makes client keep resourceVersions as an API server
// does, which its fake does not: an update that names another
// resourceVersion than the stored object's, or a merge patch whose
// metadata names one, is refused with a Conflict; an accepted update or
// patch gives the object the next one. A stored resourceVersion that is
// not a number counts as 0. A test of a write made from a cache that is
// behind a write before it needs this to fail as a cluster would.
func ResourceVersions(client reactingClientset) {
	tracker := client.Tracker()
	client.PrependReactor("*", "*", func(a core.Action) (bool, runtime.Object, error) {
		var name, sent string
		switch a := a.(type) {
		case core.UpdateAction:
			m, err := meta.Accessor(a.GetObject())
			if err != nil {
				return true, nil, err
			}
			name, sent = m.GetName(), m.GetResourceVersion()
		case core.PatchAction:
			name = a.GetName()
			if a.GetPatchType() == types.MergePatchType || a.GetPatchType() == types.StrategicMergePatchType {
				var p struct {
					Metadata struct {
						ResourceVersion string `json:"resourceVersion"`
					} `json:"metadata"`
				}
				if err := json.Unmarshal(a.GetPatch(), &p); err != nil {
					return true, nil, err
				}
				sent = p.Metadata.ResourceVersion
			}
		default:
			return false, nil, nil
		}
		gvr, ns := a.GetResource(), a.GetNamespace()
		stored, err := tracker.Get(gvr, ns, name)
		if err != nil {
			return false, nil, nil // the fake's own answer: not found
		}
		m, err := meta.Accessor(stored)
		if err != nil {
			return true, nil, err
		}
		if sent != "" && sent != m.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), name,
				errors.New("the object has been modified; please apply your changes to the latest version and try again"))
		}
		version, _ := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
		handled, obj, err := core.ObjectReaction(tracker)(a)
		if !handled || err != nil {
			return handled, obj, err
		}
		written, err := meta.Accessor(obj)
		if err != nil {
			return true, nil, err
		}
		written.SetResourceVersion(strconv.FormatUint(version+1, 10))
		return true, obj, tracker.Update(gvr, obj, ns)
	})
}

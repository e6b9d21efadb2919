package builder

import (
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"
)

// The cache's compact StatefulSet reads whole as the StatefulSet
// StripTemplates leaves, for every StatefulSet of the golden files (each
// engine, replicated, restoring), and so does a deep copy of it.
func TestCachedStatefulSetReadsAsStripped(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "statefulset-*.golden.yaml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("golden StatefulSets: %v, %v", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var sts appsv1.StatefulSet
			if err := yaml.Unmarshal(b, &sts); err != nil {
				t.Fatal(err)
			}
			sts.UID, sts.ResourceVersion, sts.Status = "uid", "42", appsv1.StatefulSetStatus{Replicas: 1, ReadyReplicas: 1, CurrentRevision: "r1"}
			want := sts.DeepCopy()
			StripTemplates(want)
			cached := CacheStatefulSet(sts.DeepCopy())
			if got := cached.StatefulSet(); !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("cached StatefulSet reads\n%+v\nwant\n%+v", got, want)
			}
			if !TemplateStripped(cached.StatefulSet()) {
				t.Error("the cached StatefulSet does not read as stripped: the drift check would compare its empty template")
			}
			if got := cached.DeepCopyObject().(*CachedStatefulSet).StatefulSet(); !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("a deep copy reads\n%+v\nwant\n%+v", got, want)
			}
			if again := CacheStatefulSet(cached.StatefulSet()).StatefulSet(); !equality.Semantic.DeepEqual(again, want) {
				t.Errorf("compacted twice, it reads\n%+v\nwant\n%+v", again, want)
			}
		})
	}
}

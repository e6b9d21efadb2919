// Package image checks the container image recipe (Dockerfile,
// .dockerignore) and the install manifests (artifacts/deploy) without a
// Docker engine or a cluster: the Dockerfile is parsed with BuildKit's own
// parser, and the kustomizations are rendered in-process by the kustomize
// library that `kubectl apply -k` embeds.
//
// It is a module of its own so that the controller's go.mod does not pull in
// BuildKit or kustomize.
package image

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const (
	controllerName      = "database-controller"
	controllerNamespace = "database-controller-system"
	// nonRootUID is the "nonroot" user of the distroless images.
	nonRootUID = 65532
)

// repoPath returns the absolute path of a file of the repository; the tests
// run in test/image.
func repoPath(t testing.TB, elem ...string) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

func readRepoFile(t testing.TB, elem ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(repoPath(t, elem...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// object is one Kubernetes object of a manifest, as YAML, with enough of its
// metadata to pick it out.
type object struct {
	// Source names where it came from: a file or a kustomization.
	Source    string
	Kind      string
	Name      string
	Namespace string
	YAML      []byte
}

func (o object) String() string {
	s := o.Kind + " " + o.Name
	if o.Namespace != "" {
		s = o.Kind + " " + o.Namespace + "/" + o.Name
	}
	return s + " (" + o.Source + ")"
}

// decode unmarshals the object into a typed API struct, strictly: a field
// the type does not have (a typo such as "resourceName") fails the test.
func (o object) decode(t testing.TB, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(o.YAML, into); err != nil {
		t.Fatalf("%s: %v", o, err)
	}
}

func newObject(t testing.TB, source string, doc []byte) (object, bool) {
	t.Helper()
	var head struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		t.Fatalf("%s: %v", source, err)
	}
	if head.Kind == "" {
		return object{}, false // an empty document, or only comments
	}
	return object{
		Source:    source,
		Kind:      head.Kind,
		Name:      head.Metadata.Name,
		Namespace: head.Metadata.Namespace,
		YAML:      doc,
	}, true
}

// manifestFiles reads every object of every YAML file under
// artifacts/<dir>, whether or not a kustomization lists it. Kustomizations
// themselves are left out.
func manifestFiles(t testing.TB, dir string) []object {
	t.Helper()
	root := repoPath(t, "artifacts", dir)
	var objs []object
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoPath(t), path)
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			obj, ok := newObject(t, rel, doc)
			if ok && obj.Kind != "Kustomization" {
				objs = append(objs, obj)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Fatalf("no manifests under %s", root)
	}
	return objs
}

// render builds the kustomization in artifacts/<dir> the way
// `kubectl apply -k` and `kubectl kustomize` do, with the same load
// restrictions (no files from outside a kustomization's directory).
func render(t testing.TB, dir string) []object {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(filesys.MakeFsOnDisk(), repoPath(t, "artifacts", dir))
	if err != nil {
		t.Fatalf("kustomize build artifacts/%s: %v", dir, err)
	}
	var objs []object
	for _, r := range resMap.Resources() {
		doc, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj, ok := newObject(t, "kustomize build artifacts/"+dir, doc)
		if !ok {
			t.Fatalf("artifacts/%s renders an object without a kind:\n%s", dir, doc)
		}
		objs = append(objs, obj)
	}
	return objs
}

// variants are the two installs: every test of the rendered manifests runs
// against both.
var variants = []struct {
	name string
	dir  string
	// namespaced: a Role instead of the ClusterRole, and --namespace.
	namespaced bool
}{
	{name: "cluster", dir: "deploy"},
	{name: "namespaced", dir: "deploy/namespaced", namespaced: true},
}

func ofKind(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// only returns the single object of the kind, failing unless there is
// exactly one.
func only(t testing.TB, objs []object, kind string) object {
	t.Helper()
	found := ofKind(objs, kind)
	if len(found) != 1 {
		t.Fatalf("want exactly one %s, found %d: %v", kind, len(found), found)
	}
	return found[0]
}

func find(objs []object, kind, name string) (object, bool) {
	for _, o := range objs {
		if o.Kind == kind && o.Name == name {
			return o, true
		}
	}
	return object{}, false
}

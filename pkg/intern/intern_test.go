package intern

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// statefulSets are the StatefulSets of the builder's golden files, one
// per engine and a replicated one, as the API would send them.
func statefulSets(t testing.TB) []*appsv1.StatefulSet {
	t.Helper()
	var out []*appsv1.StatefulSet
	for _, name := range []string{"postgresql", "mysql", "mongodb", "replicated-postgresql"} {
		b, err := os.ReadFile("../builder/testdata/statefulset-" + name + ".golden.yaml")
		if err != nil {
			t.Fatal(err)
		}
		var s appsv1.StatefulSet
		if err := yaml.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		s.UID, s.ResourceVersion = types.UID("uid-"+name), "1234"
		out = append(out, &s)
	}
	return out
}

// decoded is a copy of obj that shares no memory with it, as a watch
// gives each object.
func decoded[T any, P interface {
	*T
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}](t testing.TB, obj P) P {
	t.Helper()
	b, err := obj.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out := P(new(T))
	if err := out.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	return out
}

func others() []any {
	yes := true
	owner := []metav1.OwnerReference{{APIVersion: "dbcontroller.io/v1alpha1", Kind: "Database", Name: "orders", UID: "db-uid", Controller: &yes}}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name: name, Namespace: "shop", UID: types.UID("uid-" + name), ResourceVersion: "77",
			Labels:          map[string]string{"app.kubernetes.io/instance": "orders", "app.kubernetes.io/managed-by": "database-controller"},
			Annotations:     map[string]string{"dbcontroller.io/serial": "1f", "dbcontroller.io/not-after": "2027-02-25T03:00:00Z"},
			OwnerReferences: owner, Finalizers: []string{"dbcontroller.io/database"},
		}
	}
	return []any{
		&corev1.Secret{ObjectMeta: meta("orders-tls"), Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("x")}},
		&corev1.Service{ObjectMeta: meta("orders"), Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app.kubernetes.io/instance": "orders"}, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
			Ports: []corev1.ServicePort{{Name: "postgresql", Port: 5432, Protocol: corev1.ProtocolTCP}}}},
		&corev1.PersistentVolumeClaim{ObjectMeta: meta("data-orders-0"), Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		&corev1.Pod{ObjectMeta: meta("orders-0"), Spec: corev1.PodSpec{NodeName: "node-1"}, Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.244.0.5", PodIPs: []corev1.PodIP{{IP: "10.244.0.5"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "postgresql", Image: "postgres:17", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}}},
	}
}

// Interning changes no value of any field: every reader of a cached
// object reads what it read before.
func TestStringsKeepsTheObject(t *testing.T) {
	table := New(1<<10, 1<<10)
	var objs []any
	for _, s := range statefulSets(t) {
		objs = append(objs, s)
	}
	objs = append(objs, others()...)
	for _, obj := range objs {
		t.Run(fmt.Sprintf("%T", obj), func(t *testing.T) {
			want := reflect.ValueOf(obj).MethodByName("DeepCopyObject").Call(nil)[0].Interface()
			table.Strings(obj)
			if !reflect.DeepEqual(obj, want) {
				t.Errorf("interned object differs:\n got %+v\nwant %+v", obj, want)
			}
		})
	}
}

func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// Two StatefulSets decoded apart share their common strings once
// interned, and keep their own name, UID and resourceVersion.
func TestStringsShares(t *testing.T) {
	src := statefulSets(t)[0]
	a, b := decoded(t, src), decoded(t, src)
	if same(a.Spec.Template.Spec.Containers[0].Image, b.Spec.Template.Spec.Containers[0].Image) {
		t.Fatal("decoded copies share an image string before interning: the test proves nothing")
	}
	table := New(1<<16, 1<<16)
	table.Strings(a)
	table.Strings(b)
	ca, cb := a.Spec.Template.Spec.Containers[0], b.Spec.Template.Spec.Containers[0]
	for what, pair := range map[string][2]string{
		"image":          {ca.Image, cb.Image},
		"container name": {ca.Name, cb.Name},
		"mount path":     {ca.VolumeMounts[0].MountPath, cb.VolumeMounts[0].MountPath},
		"namespace":      {a.Namespace, b.Namespace},
		"owner's kind":   {a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind},
	} {
		if !same(pair[0], pair[1]) {
			t.Errorf("%s %q is not shared", what, pair[0])
		}
	}
	for key, value := range a.Labels {
		for otherKey, otherValue := range b.Labels {
			if key == otherKey && (!same(key, otherKey) || !same(value, otherValue)) {
				t.Errorf("label %s=%s is not shared", key, value)
			}
		}
	}
	for what, pair := range map[string][2]string{
		"name":            {a.Name, b.Name},
		"uid":             {string(a.UID), string(b.UID)},
		"resourceVersion": {a.ResourceVersion, b.ResourceVersion},
	} {
		if same(pair[0], pair[1]) {
			t.Errorf("the object's own %s is interned: it churns the table", what)
		}
	}
}

func sameMap[M ~map[K]V, K comparable, V any](a, b M) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func sameSlice[T any](a, b []T) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }

// The maps of labels and selectors, the owner references, the Services'
// ports and the claims' requests that objects decoded apart hold equal are
// one each once interned, whatever the objects' kinds; annotations, and
// values that differ, are not shared; every object reads as it did.
func TestStringsSharesMapsAndLists(t *testing.T) {
	objs := others()
	svc, secret, claim := objs[1].(*corev1.Service), objs[0].(*corev1.Secret), objs[2].(*corev1.PersistentVolumeClaim)
	a, b, s, c := decoded(t, svc), decoded(t, svc), decoded(t, secret), decoded(t, claim)
	otherClaim := decoded(t, claim)
	other := decoded(t, svc)
	other.Labels = map[string]string{"app.kubernetes.io/instance": "payments", "app.kubernetes.io/managed-by": "database-controller"}
	other.OwnerReferences[0].UID = "payments-uid"
	other.Spec.Ports[0].Port = 5433
	otherClaim.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
	if sameMap(a.Labels, b.Labels) || sameSlice(a.OwnerReferences, b.OwnerReferences) || sameSlice(a.Spec.Ports, b.Spec.Ports) {
		t.Fatal("decoded copies share their labels, owners or ports before interning: the test proves nothing")
	}
	table := New(1<<10, 1<<10)
	for _, obj := range []any{a, b, s, other, c, otherClaim} {
		table.Strings(obj)
	}
	for what, pair := range map[string][2]map[string]string{
		"the Services' labels":              {a.Labels, b.Labels},
		"a Service's and a Secret's labels": {a.Labels, s.Labels},
		"the Services' selectors":           {a.Spec.Selector, b.Spec.Selector},
	} {
		if !sameMap(pair[0], pair[1]) {
			t.Errorf("%s are two maps", what)
		}
	}
	for what, pair := range map[string][2][]metav1.OwnerReference{
		"the Services' owners":              {a.OwnerReferences, b.OwnerReferences},
		"a Service's and a Secret's owners": {a.OwnerReferences, s.OwnerReferences},
		"a Service's and a claim's owners":  {a.OwnerReferences, c.OwnerReferences},
	} {
		if !sameSlice(pair[0], pair[1]) {
			t.Errorf("%s are two lists", what)
		}
	}
	if !sameSlice(a.Spec.Ports, b.Spec.Ports) {
		t.Error("the Services' ports are two lists")
	}
	sets := statefulSets(t)
	pg, pg2, mysql := decoded(t, sets[0]), decoded(t, sets[0]), decoded(t, sets[1])
	for _, s := range []any{pg, pg2, mysql} {
		table.Strings(s)
	}
	if !sameSlice(pg.Spec.Template.Spec.Containers, pg2.Spec.Template.Spec.Containers) ||
		!sameSlice(pg.Spec.VolumeClaimTemplates, pg2.Spec.VolumeClaimTemplates) {
		t.Error("two StatefulSets' equal containers or claim templates are two lists")
	}
	if sameSlice(pg.Spec.Template.Spec.Containers, mysql.Spec.Template.Spec.Containers) {
		t.Error("a PostgreSQL and a MySQL StatefulSet's containers are one list")
	}
	if !reflect.DeepEqual(pg, decoded(t, sets[0])) || !reflect.DeepEqual(pg2, decoded(t, sets[0])) || !reflect.DeepEqual(mysql, decoded(t, sets[1])) {
		t.Error("a StatefulSet with shared lists reads differently")
	}
	if !sameMap(c.Spec.Resources.Requests, c.Status.Capacity) {
		t.Error("a claim's requests and capacity of 1Gi are two maps")
	}
	if sameMap(a.Annotations, b.Annotations) {
		t.Error("the Services' annotations are one map: an object's annotations are its own")
	}
	if sameMap(a.Labels, other.Labels) || sameSlice(a.OwnerReferences, other.OwnerReferences) || sameSlice(a.Spec.Ports, other.Spec.Ports) {
		t.Error("labels, owners or ports that differ are one value")
	}
	if sameMap(c.Spec.Resources.Requests, otherClaim.Spec.Resources.Requests) {
		t.Error("requests of 1Gi and of 2Gi are one map")
	}
	for k, v := range a.Annotations {
		for k2, v2 := range b.Annotations {
			if k == k2 && (!same(k, k2) || !same(v, v2)) {
				t.Errorf("annotation %s=%s is held twice", k, v)
			}
		}
	}
	if !reflect.DeepEqual(a, svc) || !reflect.DeepEqual(b, svc) || !reflect.DeepEqual(s, secret) || !reflect.DeepEqual(c, claim) {
		t.Error("an object with shared maps or lists reads differently")
	}
	if other.OwnerReferences[0].UID != "payments-uid" || other.Spec.Ports[0].Port != 5433 || otherClaim.Spec.Resources.Requests.Storage().String() != "2Gi" {
		t.Errorf("an object that differs reads another's values: owner %s, port %d, storage %s", other.OwnerReferences[0].UID, other.Spec.Ports[0].Port,
			otherClaim.Spec.Resources.Requests.Storage())
	}
}

// A map or list the table gave out is only read after: objects that share
// it are read while others with equal ones, and values that evict them,
// are interned (the race detector of make test-unit sees a write).
func TestSharedMapsAreOnlyRead(t *testing.T) {
	labels := func(instance string) map[string]string {
		return map[string]string{"app.kubernetes.io/instance": instance, "app.kubernetes.io/managed-by": "database-controller"}
	}
	owners := func(instance string) []metav1.OwnerReference {
		yes := true
		return []metav1.OwnerReference{{APIVersion: "dbcontroller.io/v1alpha1", Kind: "Database", Name: instance, UID: types.UID(instance), Controller: &yes}}
	}
	secret := func(name, instance string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels(instance), OwnerReferences: owners(instance)}}
	}
	table := New(1, 1)
	first := secret("a", "orders")
	table.Strings(first)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			// Equal values, found; then others, which evict them; then
			// equal ones again, which take their slot back.
			instance := "orders"
			if i%3 == 1 {
				instance = fmt.Sprint("payments-", i)
			}
			table.Strings(secret(fmt.Sprint(i), instance))
		}
	}()
	reads := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		for k, v := range first.Labels {
			reads += len(k) + len(v)
		}
		for _, o := range first.OwnerReferences {
			reads += len(o.APIVersion) + len(o.Kind) + len(o.Name) + len(o.UID)
		}
	}
	if !reflect.DeepEqual(first.Labels, labels("orders")) || !reflect.DeepEqual(first.OwnerReferences, owners("orders")) || reads == 0 {
		t.Errorf("the first object reads labels %v and owners %v after %d bytes read", first.Labels, first.OwnerReferences, reads)
	}
}

// Values of equal hashes are shared only when they are equal: the hash
// picks, the comparison decides.
func TestShareComparesValuesOfEqualHash(t *testing.T) {
	table := New(1, 1)
	ports := func(port int32) []corev1.ServicePort { return []corev1.ServicePort{{Name: "postgresql", Port: port}} }
	keep := func(*Table, []corev1.ServicePort) {}
	first := share(table, 7, ports(5432), keep)
	if got := share(table, 7, ports(5432), keep); !sameSlice(got, first) {
		t.Error("equal ports of equal hashes are two lists")
	}
	if got := share(table, 7, ports(5433), keep); sameSlice(got, first) || got[0].Port != 5433 {
		t.Errorf("ports 5433 of the hash of 5432 are given %v", got)
	}
	labels := share(table, 7, map[string]string{"a": "b"}, (*Table).stringMap)
	if got := share(table, 7, map[string]string{"a": "c"}, (*Table).stringMap); sameMap(got, labels) || got["a"] != "c" {
		t.Errorf("a map a=c of the hash of a=b is given %v", got)
	}
}

// A string takes a slot of one before it: the table holds no more
// strings than it has slots.
func TestTableIsBounded(t *testing.T) {
	table := New(1, 1)
	if len(table.slots) != ways {
		t.Fatalf("a table of 1 slot has %d, want one set of %d", len(table.slots), ways)
	}
	first := table.String(string([]byte("one")))
	if got := table.String(string([]byte("one"))); !same(got, first) {
		t.Error("a string the table holds is not given back")
	}
	for i := range 100 * ways {
		table.String(fmt.Sprint(i))
	}
	if got := table.String(string([]byte("one"))); same(got, first) {
		t.Errorf("a table of %d slots holds %d strings", ways, 100*ways+1)
	}
	if table.String("") != "" {
		t.Error("the empty string changed")
	}
}

// BenchmarkStrings reports what interning costs per StatefulSet, and the
// bytes it saves each one in a cache of a thousand, decoded apart.
func BenchmarkStrings(b *testing.B) {
	srcs := statefulSets(b)
	const n = 1000
	fresh := func() []*appsv1.StatefulSet {
		out := make([]*appsv1.StatefulSet, n)
		for i := range out {
			out[i] = decoded(b, srcs[i%len(srcs)])
		}
		return out
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := heap()
	plain := fresh()
	plainBytes := heap() - base
	runtime.KeepAlive(plain)
	plain = nil
	base = heap()
	table := New(1<<14, 1<<14)
	interned := fresh()
	for _, s := range interned {
		table.Strings(s)
	}
	internedBytes := heap() - base
	runtime.KeepAlive(interned)

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		table.Strings(interned[i%n])
	}
	b.ReportMetric(float64(plainBytes)/n, "B/cached-plain")
	b.ReportMetric(float64(internedBytes)/n, "B/cached-interned")
}

// node refers to itself, as some API types do (a JSON schema's
// properties).
type node struct {
	Name     string
	Children []node
	Next     *node
	Any      any
	Count    int
	hidden   string
}

// numbers holds no string: it has no plan, and walks nothing.
type numbers struct {
	A int
	B *bool
	C []byte
}

func TestStringsWalksEveryKindOfType(t *testing.T) {
	mk := func() *node {
		return &node{
			Name:     string([]byte("root")),
			Children: []node{{Name: string([]byte("child")), Next: &node{Name: string([]byte("next"))}}},
			Any:      &node{Name: string([]byte("held"))},
			hidden:   string([]byte("hidden")),
		}
	}
	a, b := mk(), mk()
	table := New(1<<10, 1<<10)
	table.Strings(a)
	table.Strings(b)
	if !reflect.DeepEqual(a, mk()) {
		t.Fatalf("interned node differs: %+v", a)
	}
	for what, pair := range map[string][2]string{
		"a field":                       {a.Name, b.Name},
		"a slice's element":             {a.Children[0].Name, b.Children[0].Name},
		"a pointer's, inside the slice": {a.Children[0].Next.Name, b.Children[0].Next.Name},
		"what an interface points at":   {a.Any.(*node).Name, b.Any.(*node).Name},
	} {
		if !same(pair[0], pair[1]) {
			t.Errorf("%s %q is not shared", what, pair[0])
		}
	}
	if same(a.hidden, b.hidden) {
		t.Error("an unexported field was set")
	}
	if p := planOf(reflect.TypeFor[*numbers]()); p != nil {
		t.Error("a type without strings has a plan")
	}
	table.Strings(&numbers{A: 1, C: []byte("x")})
	table.Strings(nil)
	table.Strings(node{})
}

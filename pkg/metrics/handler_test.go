package metrics

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	listers "github.com/dbcontroller/database-controller/pkg/generated/listers/dbcontroller/v1alpha1"
)

// scrape serves one request of the handler, with the Accept-Encoding
// given, and returns the response and its body, decompressed.
func scrape(t testing.TB, h http.Handler, acceptEncoding string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		body = gz
	}
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// registryOf is a registry of the Databases' state with n Databases, each
// ready and with TLS, as the benchmark's are when Running: four series
// each.
func registryOf(t testing.TB, n int) *prometheus.Registry {
	t.Helper()
	dbIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	backupIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	notAfter := metav1.NewTime(time.Date(2027, 2, 25, 0, 0, 0, 0, time.UTC))
	for i := range n {
		db := &dbv1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("db-%05d", i)}, Status: dbv1alpha1.DatabaseStatus{
			Conditions: []metav1.Condition{{Type: dbv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "AllReplicasReady"}},
			TLS:        &dbv1alpha1.TLSStatus{NotAfter: &notAfter, AuthorityNotAfter: &notAfter}}}
		if err := dbIndex.Add(db); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newStateCollector(listers.NewDatabaseLister(dbIndex), listers.NewDatabaseBackupLister(backupIndex), &primaryChanges{}))
	return reg
}

// The handler gzips for a scraper that accepts it, again with the writer
// it kept, and serves the text as it is to one that does not: the same
// metrics each time.
func TestHandler(t *testing.T) {
	reg := registryOf(t, 3)
	h := Handler(reg)
	_, want := scrape(t, promhttp.HandlerFor(reg, promhttp.HandlerOpts{DisableCompression: true}), "")
	if want == "" {
		t.Fatal("no metrics")
	}
	for _, tc := range []struct {
		acceptEncoding string
		gzipped        bool
	}{
		{"gzip", true},
		{"gzip", true}, // with the writer the first one kept
		{"identity", false},
		{"", false},
		{"deflate, gzip;q=0.5", true},
		{"gzip;q=0", false},
		{"*", true},
		{"GZip", true},
		{"gzip; q=0", false},
	} {
		resp, got := scrape(t, h, tc.acceptEncoding)
		if gzipped := resp.Header.Get("Content-Encoding") == "gzip"; gzipped != tc.gzipped {
			t.Errorf("Accept-Encoding %q: gzipped %v, want %v", tc.acceptEncoding, gzipped, tc.gzipped)
		}
		if got != want {
			t.Errorf("Accept-Encoding %q: metrics\n%s\nwant\n%s", tc.acceptEncoding, got, want)
		}
		if ct := resp.Header.Get("Content-Type"); ct == "" {
			t.Errorf("Accept-Encoding %q: no Content-Type", tc.acceptEncoding)
		}
	}
}

// BenchmarkScrape is one gzipped scrape of the state of 1,000 Databases
// (4,000 series), by this package's Handler and by promhttp's own gzip.
// The garbage collection between scrapes is what a scrape meets in a
// running controller: each one empties the pool promhttp keeps its
// writers in.
func BenchmarkScrape(b *testing.B) {
	reg := registryOf(b, 1000)
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"Handler", Handler(reg)},
		{"promhttp", promhttp.HandlerFor(reg, promhttp.HandlerOpts{})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				b.StopTimer()
				runtime.GC()
				b.StartTimer()
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				req.Header.Set("Accept-Encoding", "gzip")
				bc.h.ServeHTTP(rec, req)
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size), "gzipped-bytes")
		})
	}
}

// The state collector sends each family's series in the order the
// registry sorts them to (by their label values, the labels in the order
// of their names), so that its sort finds them sorted: Databases of two
// namespaces, listed in no order, with both certificates each.
func TestStateSeriesComeSorted(t *testing.T) {
	dbIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	backupIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	notAfter := metav1.NewTime(time.Date(2027, 2, 25, 0, 0, 0, 0, time.UTC))
	for _, key := range []string{"b/orders", "a/carts", "a/orders", "b/carts", "a/users", "c/orders"} {
		ns, name, _ := strings.Cut(key, "/")
		if err := dbIndex.Add(&dbv1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Status: dbv1alpha1.DatabaseStatus{
			Conditions: []metav1.Condition{{Type: dbv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "AllReplicasReady"}},
			TLS:        &dbv1alpha1.TLSStatus{NotAfter: &notAfter, AuthorityNotAfter: &notAfter}}}); err != nil {
			t.Fatal(err)
		}
	}
	c := newStateCollector(listers.NewDatabaseLister(dbIndex), listers.NewDatabaseBackupLister(backupIndex), &primaryChanges{})
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	families := map[string][]string{}
	for m := range ch {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			t.Fatal(err)
		}
		var values []string
		for _, l := range out.Label {
			values = append(values, l.GetValue())
		}
		families[m.Desc().String()] = append(families[m.Desc().String()], strings.Join(values, "\x00"))
	}
	if len(families) != 3 {
		t.Fatalf("%d families, want 3 (ready, its reason, the certificates' expiry)", len(families))
	}
	for desc, series := range families {
		if !slices.IsSorted(series) {
			t.Errorf("%s: series in the order %q, not sorted", desc, series)
		}
	}
}

package metrics

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

// stateOf is the state of n Databases, each ready and with TLS, as the
// benchmark's are when Running: four series each.
func stateOf(t testing.TB, n int) *stateWriter {
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
	return &stateWriter{dbs: listers.NewDatabaseLister(dbIndex), backups: listers.NewDatabaseBackupLister(backupIndex), changes: &primaryChanges{}}
}

// The handler serves the registry's metrics and then the Databases'
// state, gzipped for a scraper that accepts it, again with the writer it
// kept, and as it is to one that does not: the same text each time.
func TestHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	syncs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "syncs_total", Help: "Syncs."}, []string{"result"})
	syncs.WithLabelValues("success").Add(3)
	reg.MustRegister(syncs)
	state := stateOf(t, 3)
	h := newHandler(reg, state)
	want := `# HELP syncs_total Syncs.
# TYPE syncs_total counter
syncs_total{result="success"} 3
` + writeState(t, state)
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
		if ct, want := resp.Header.Get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8"; ct != want {
			t.Errorf("Accept-Encoding %q: Content-Type %q, want %q", tc.acceptEncoding, ct, want)
		}
	}
}

// A registry that fails to gather is a 500 that says why, as with
// promhttp's default handler.
func TestHandlerGatherError(t *testing.T) {
	failing := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return nil, errors.New("collector broke") })
	resp, body := scrape(t, newHandler(failing, stateOf(t, 1)), "gzip")
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "collector broke") {
		t.Errorf("got %d %q, want 500 naming the error", resp.StatusCode, body)
	}
}

// The controller's whole /metrics, every collector registered as main.go
// registers them, reads as Prometheus reads it: its parser fails on a
// family written twice (the state is not in the registry, so the registry
// cannot tell), and the linter passes every family.
func TestHandlerServesEachFamilyOnce(t *testing.T) {
	m := New()
	dbIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	m.RegisterDatabases(listers.NewDatabaseLister(dbIndex))
	m.RegisterCached(map[string][]cache.Store{"Database": {dbIndex}})
	m.RegisterServerAccess("auto", "direct", nil)
	state := stateOf(t, 2)
	m.RegisterDatabaseState(state.dbs, state.backups)
	m.PrimaryChanged("bench", "db-00001", true)
	m.ObserveSync("success", time.Second)
	_, body := scrape(t, m.Handler(), "gzip")
	families := parseText(t, body)
	for _, name := range []string{"database_controller_reconcile_total", "database_controller_server_access_info", "database_controller_database_ready",
		"database_controller_primary_changes_total", "database_controller_tls_not_after_timestamp_seconds", "go_goroutines"} {
		if families[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	for _, p := range lint(t, families) {
		if strings.HasPrefix(p.Metric, namespace) {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
}

// BenchmarkScrape is one gzipped scrape of the state of 1,000 Databases
// (4,000 series). The garbage collection between scrapes is what a scrape
// meets in a running controller.
func BenchmarkScrape(b *testing.B) {
	h := newHandler(prometheus.NewRegistry(), stateOf(b, 1000))
	b.ReportAllocs()
	var size int
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		h.ServeHTTP(rec, req)
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "gzipped-bytes")
}

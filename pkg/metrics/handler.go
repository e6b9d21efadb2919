package metrics

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// Handler serves the metrics: the Registry's, then the Databases' state
// (RegisterDatabaseState, which must come first), in Prometheus' text
// format (version 0.0.4, which every Prometheus accepts), gzipped at
// gzip.BestSpeed when the scraper accepts it (Prometheus does), through
// one writer kept from scrape to scrape. promhttp's own gzip compresses at
// the default level with a writer from a sync.Pool, which each garbage
// collection empties: a new writer of about 0.8 MB for nearly every
// scrape. The metrics compress as well at either level. A failure to
// gather the Registry's metrics is a 500 with the error, as promhttp's
// default.
func (m *Metrics) Handler() http.Handler {
	return newHandler(m.Registry, m.state)
}

func newHandler(reg prometheus.Gatherer, state *stateWriter) http.Handler {
	writers := make(chan *gzip.Writer, 1)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		families, err := reg.Gather()
		if err != nil {
			http.Error(w, "An error has occurred while gathering the metrics:\n\n"+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", string(expfmt.FmtText))
		var body io.Writer = w
		var gz *gzip.Writer
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			select {
			case gz = <-writers:
				gz.Reset(w)
			default:
				gz, _ = gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level: no error
			}
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Add("Vary", "Accept-Encoding")
			body = gz
		}
		out := bufio.NewWriterSize(body, 32<<10)
		for _, f := range families {
			if _, err := expfmt.MetricFamilyToText(out, f); err != nil {
				return // the scraper is gone
			}
		}
		if state != nil {
			if err := state.writeTo(out); err != nil {
				return
			}
		}
		if out.Flush() != nil || gz == nil || gz.Close() != nil {
			return
		}
		select {
		case writers <- gz:
		default:
		}
	})
}

// acceptsGzip reports whether an Accept-Encoding header accepts gzip: it
// names it (in any case, or *) without q=0.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(part, ";")
		coding = strings.TrimSpace(coding)
		if !strings.EqualFold(coding, "gzip") && coding != "*" {
			continue
		}
		q := strings.ReplaceAll(params, " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// series is one line of the Prometheus text format: a metric name, its
// labels and its value.
type series struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape is one read of the controller's /metrics.
type scrape struct {
	at     time.Time
	series []series
}

// parseText reads the Prometheus text exposition format as client_golang
// writes it (no timestamps, one sample per line).
func parseText(r io.Reader, at time.Time) (*scrape, error) {
	s := &scrape{at: at}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("malformed metrics line %q", line)
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("malformed value in %q: %w", line, err)
		}
		head := line[:sp]
		name, labels := head, map[string]string{}
		if i := strings.IndexByte(head, '{'); i >= 0 {
			name = head[:i]
			if labels, err = parseLabels(strings.TrimSuffix(head[i+1:], "}")); err != nil {
				return nil, fmt.Errorf("malformed labels in %q: %w", line, err)
			}
		}
		s.series = append(s.series, series{name: name, labels: labels, value: v})
	}
	return s, sc.Err()
}

// parseLabels reads `a="x",b="y \"quoted\""`.
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return nil, fmt.Errorf("expected name=\"value\" at %q", s)
		}
		key := strings.TrimSpace(s[:eq])
		var val strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(s[i])
				}
				continue
			}
			val.WriteByte(s[i])
		}
		if i >= len(s) {
			return nil, fmt.Errorf("unterminated value at %q", s)
		}
		out[key] = val.String()
		s = strings.TrimPrefix(strings.TrimSpace(s[i+1:]), ",")
	}
	return out, nil
}

func matches(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// sum adds every series of name whose labels include want. A nil scrape
// sums to 0: counters start at 0 with the process.
func (s *scrape) sum(name string, want map[string]string) float64 {
	if s == nil {
		return 0
	}
	var total float64
	for _, x := range s.series {
		if x.name == name && matches(x.labels, want) {
			total += x.value
		}
	}
	return total
}

// byLabels sums name by the values of the given labels, keyed by those
// values joined with a tab.
func (s *scrape) byLabels(name string, keys ...string) map[string]float64 {
	out := map[string]float64{}
	if s == nil {
		return out
	}
	for _, x := range s.series {
		if x.name != name {
			continue
		}
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = x.labels[k]
		}
		out[strings.Join(parts, "\t")] += x.value
	}
	return out
}

// histogram is the cumulative bucket counts of a Prometheus histogram,
// summed over every series that matched.
type histogram struct {
	bounds []float64 // upper bounds, ascending, +Inf last
	counts []float64 // cumulative counts per bound
}

func (s *scrape) histogram(name string, want map[string]string) histogram {
	byBound := map[float64]float64{}
	if s != nil {
		for _, x := range s.series {
			if x.name != name+"_bucket" || !matches(x.labels, want) {
				continue
			}
			le, err := strconv.ParseFloat(x.labels["le"], 64)
			if err != nil {
				continue
			}
			byBound[le] += x.value
		}
	}
	var h histogram
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	sort.Float64s(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, byBound[b])
	}
	return h
}

// minus is the histogram of the observations made between earlier and h.
func (h histogram) minus(earlier histogram) histogram {
	prev := map[float64]float64{}
	for i, b := range earlier.bounds {
		prev[b] = earlier.counts[i]
	}
	out := histogram{bounds: append([]float64(nil), h.bounds...)}
	for i, b := range h.bounds {
		out.counts = append(out.counts, h.counts[i]-prev[b])
	}
	return out
}

func (h histogram) total() float64 {
	if len(h.counts) == 0 {
		return 0
	}
	return h.counts[len(h.counts)-1]
}

// quantile estimates the q-quantile as Prometheus' histogram_quantile does:
// linear interpolation inside the bucket that holds the rank. It returns NaN
// for an empty histogram; a rank in the +Inf bucket returns the largest
// finite bound (a lower bound of the true value).
func (h histogram) quantile(q float64) float64 {
	n := h.total()
	if n == 0 {
		return math.NaN()
	}
	rank := q * n
	lower, below := 0.0, 0.0
	for i, b := range h.bounds {
		c := h.counts[i]
		if c >= rank {
			if math.IsInf(b, 1) {
				return lower
			}
			if c == below {
				return b
			}
			return lower + (b-lower)*(rank-below)/(c-below)
		}
		if !math.IsInf(b, 1) {
			lower = b
		}
		below = c
	}
	return lower
}

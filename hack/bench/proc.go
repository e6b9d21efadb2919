package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// controllerProc is the ./controller binary run as a subprocess, exactly as
// a user runs it out of cluster.
type controllerProc struct {
	cmd         *exec.Cmd
	args        []string
	metricsAddr string
	healthAddr  string
	logPath     string
	exited      chan struct{}
	client      *http.Client
}

func startController(bin string, args, env []string, logPath string) (*controllerProc, error) {
	metricsAddr, err := freeAddress()
	if err != nil {
		return nil, err
	}
	healthAddr, err := freeAddress()
	if err != nil {
		return nil, err
	}
	args = append([]string{
		"--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=" + healthAddr,
	}, args...)
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &controllerProc{
		cmd:         exec.Command(bin, args...),
		args:        args,
		metricsAddr: metricsAddr,
		healthAddr:  healthAddr,
		logPath:     logPath,
		exited:      make(chan struct{}),
		client:      &http.Client{Timeout: 10 * time.Second},
	}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); logFile.Close(); close(p.exited) }()
	return p, nil
}

func freeAddress() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (p *controllerProc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *controllerProc) get(addr, path string) (int, []byte, error) {
	resp, err := p.client.Get("http://" + addr + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// waitReady waits for /readyz: informer caches synced.
func (p *controllerProc) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if !p.running() {
			return fmt.Errorf("controller exited at start; log %s:\n%s", p.logPath, tail(p.logPath, 20))
		}
		if code, _, err := p.get(p.healthAddr, "/readyz"); err == nil && code == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("controller not ready after %s; log %s:\n%s", timeout, p.logPath, tail(p.logPath, 20))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *controllerProc) scrape() (*scrape, error) {
	at := time.Now()
	code, body, err := p.get(p.metricsAddr, "/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %d", code)
	}
	return parseText(bytes.NewReader(body), at)
}

// heapProfile saves the controller's heap profile, taken after a GC, to
// path, and returns the in-use bytes by function from `go tool pprof -top`
// (no top when go is not on the PATH).
func (p *controllerProc) heapProfile(path, bin string) (string, error) {
	code, body, err := p.get(p.metricsAddr, "/debug/pprof/heap?gc=1")
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("GET /debug/pprof/heap: %d", code)
	}
	return savePprof(path, bin, body, "-sample_index=inuse_space", "-nodecount=20")
}

// cpuProfile saves a CPU profile of the controller over d to path, and
// returns the CPU time by function, cumulative, from `go tool pprof -top`
// (no top when go is not on the PATH).
func (p *controllerProc) cpuProfile(ctx context.Context, path, bin string, d time.Duration) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.metricsAddr, int(d.Seconds())), nil)
	if err != nil {
		return "", err
	}
	// The profile takes d to answer: past p.client's timeout.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /debug/pprof/profile: %d", resp.StatusCode)
	}
	return savePprof(path, bin, body, "-cum", "-nodecount=30")
}

// savePprof writes a profile to path and returns `go tool pprof -top` of
// it with args, or "" when go is not on the PATH.
func savePprof(path, bin string, profile []byte, args ...string) (string, error) {
	if err := os.WriteFile(path, profile, 0o644); err != nil {
		return "", err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", nil
	}
	top, err := exec.Command(goBin, append(append([]string{"tool", "pprof", "-top"}, args...), bin, path)...).Output()
	if err != nil {
		return "", fmt.Errorf("go tool pprof: %w", err)
	}
	return strings.TrimSpace(string(top)), nil
}

// peakRSS is the process's high-water mark of resident memory (VmHWM), in
// bytes: the true peak, not a sample.
func (p *controllerProc) peakRSS() (float64, error) {
	return procStatusField(p.cmd.Process.Pid, "VmHWM")
}

// endRSS is the process's resident memory now by kind, in bytes: anon
// (heap, stacks: what its work costs) and file (the pages of its binary it
// touched, which the kernel drops first when memory is short).
func (p *controllerProc) endRSS() (anon, file float64, err error) {
	if anon, err = procStatusField(p.cmd.Process.Pid, "RssAnon"); err != nil {
		return 0, 0, err
	}
	file, err = procStatusField(p.cmd.Process.Pid, "RssFile")
	return anon, file, err
}

func procStatusField(pid int, field string) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != field {
			continue
		}
		fs := strings.Fields(v)
		if len(fs) < 1 {
			break
		}
		n, err := strconv.ParseFloat(fs[0], 64)
		if err != nil {
			return 0, err
		}
		if len(fs) > 1 && fs[1] == "kB" {
			n *= 1024
		}
		return n, nil
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// stop sends SIGTERM and waits for the controller to exit (SIGKILL after a minute).
func (p *controllerProc) stop() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		logf("controller did not exit within a minute of SIGTERM: killing it")
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// sampleInterval is how often the sampler scrapes the controller at n
// Databases: every n/1000 seconds, and at least every second. A scrape
// costs the controller time in proportion to the Databases (it exports a
// few series for each: readiness, its reason, its certificates' expiry):
// about 60 ms at 5,000, where one a second was up to a third of the
// controller's CPU in convergence; a Prometheus server scrapes every 15 to
// 60 s. At one scrape per n/1000 seconds the sampler costs the controller
// the same share of its time at every n, that of N=1000 at one a second,
// the interval of the runs before this one.
func sampleInterval(n int) time.Duration {
	return max(time.Second, time.Duration(n)*time.Second/1000)
}

// sample is what the sampler reads every interval.
type sample struct {
	at          time.Time
	rss         float64 // process_resident_memory_bytes
	heapAlloc   float64 // go_memstats_heap_alloc_bytes
	heapInuse   float64 // go_memstats_heap_inuse_bytes
	depth       float64 // workqueue_depth{name="databases"}
	running     float64 // database_controller_databases{phase="Running"}
	reconciles  float64 // database_controller_reconcile_total
	writes      float64 // rest_client_requests_total, POST/PUT/PATCH/DELETE
	cpuSeconds  float64 // process_cpu_seconds_total
	goroutines  float64 // go_goroutines
	loadAverage float64 // 1-minute load average of the machine
}

func sampleOf(s *scrape) sample {
	var writes float64
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		writes += s.sum("rest_client_requests_total", map[string]string{"method": m})
	}
	return sample{
		at:          s.at,
		rss:         s.sum("process_resident_memory_bytes", nil),
		heapAlloc:   s.sum("go_memstats_heap_alloc_bytes", nil),
		heapInuse:   s.sum("go_memstats_heap_inuse_bytes", nil),
		depth:       s.sum("workqueue_depth", map[string]string{"name": "databases"}),
		running:     s.sum("database_controller_databases", map[string]string{"phase": "Running"}),
		reconciles:  s.sum("database_controller_reconcile_total", nil),
		writes:      writes,
		cpuSeconds:  s.sum("process_cpu_seconds_total", nil),
		goroutines:  s.sum("go_goroutines", nil),
		loadAverage: loadAverage(),
	}
}

// sampler scrapes the controller every interval until stopped.
type sampler struct {
	mu      sync.Mutex
	samples []sample
	errors  int
	stop    chan struct{}
	done    chan struct{}
}

func startSampler(p *controllerProc, every time.Duration) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			sc, err := p.scrape()
			s.mu.Lock()
			if err != nil {
				s.errors++
			} else {
				s.samples = append(s.samples, sampleOf(sc))
			}
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampler) finish() []sample {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples
}

func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	fs := strings.Fields(string(b))
	if len(fs) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(fs[0], 64)
	return v
}

// componentCPU reads the CPU seconds (user+system) used so far by each
// process recorded in the local control plane's pid files, and by the
// extra pids given.
func componentCPU(localDir string, extra map[string]int) map[string]float64 {
	out := map[string]float64{}
	pids := map[string]int{}
	for k, v := range extra {
		pids[k] = v
	}
	files, _ := filepath.Glob(filepath.Join(localDir, "pids", "*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			continue
		}
		pids[strings.TrimSuffix(filepath.Base(f), ".pid")] = pid
	}
	for name, pid := range pids {
		if s, err := cpuSecondsOf(pid); err == nil {
			out[name] = s
		}
	}
	return out
}

// cpuSecondsOf is the CPU time pid has used, user plus system (fields 14
// and 15 of /proc/PID/stat), in seconds.
func cpuSecondsOf(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fs := strings.Fields(s[i+1:])
	// fs[0] is field 3 (state); utime is field 14, stime field 15.
	if len(fs) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseFloat(fs[11], 64)
	st, err2 := strconv.ParseFloat(fs[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	const clkTck = 100 // USER_HZ on Linux
	return (ut + st) / clkTck, nil
}

// machineBusySeconds is the CPU time every process on the machine has used
// since boot, all cores together (the busy fields of /proc/stat's cpu line).
func machineBusySeconds() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fs := strings.Fields(line)
	if len(fs) < 9 || fs[0] != "cpu" {
		return 0
	}
	var busy float64
	// user nice system idle iowait irq softirq steal: all but idle and iowait.
	for i, f := range fs[1:9] {
		if i == 3 || i == 4 {
			continue
		}
		v, _ := strconv.ParseFloat(f, 64)
		busy += v
	}
	const clkTck = 100
	return busy / clkTck
}

// sampleLoad appends the 1-minute load average to into every second until
// the returned function is called.
func sampleLoad(into *[]float64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			*into = append(*into, loadAverage())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-finished }) }
}

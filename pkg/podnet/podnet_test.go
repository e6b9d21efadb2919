package podnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/dbcontroller/database-controller/pkg/cached"
)

// fakePaths records each attempt of a Dialer, and answers with the
// outcome a test gave each path.
type fakePaths struct {
	attempts      []string
	direct, tuned error
}

func (f *fakePaths) Direct(_ context.Context, _, addr string) (net.Conn, error) {
	f.attempts = append(f.attempts, "direct "+addr)
	if f.direct != nil {
		return nil, f.direct
	}
	c, _ := net.Pipe()
	return c, nil
}

func (f *fakePaths) Dial(_ context.Context, pod Pod, port string) (net.Conn, error) {
	f.attempts = append(f.attempts, fmt.Sprintf("port-forward %s/%s %s", pod.Namespace, pod.Name, port))
	if f.tuned != nil {
		return nil, f.tuned
	}
	c, _ := net.Pipe()
	return c, nil
}

var (
	unrouted = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}
	timedOut = &net.OpError{Op: "dial", Net: "tcp", Err: &timeoutError{}}
	refused  = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
)

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func podOf(ip string) (Pod, bool) {
	if ip == "10.0.0.9" {
		return Pod{}, false
	}
	return Pod{Namespace: "ns", Name: "db-0"}, true
}

// Each access takes the paths it says, in its order: the attempts of two
// dials of one address (the second after a given time), and the errors.
func TestDialerPaths(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		access    Access
		inCluster bool
		// direct and tunnel fail with these on every attempt.
		direct, tunnel error
		addr           string
		// after is when the second dial is, after the first.
		after        time.Duration
		wantAttempts []string
		// wantErr is what each dial's error says ("" for none).
		wantErr [2]string
	}{{
		name: "direct", access: AccessDirect, direct: unrouted,
		wantAttempts: []string{"direct 10.0.0.1:5432", "direct 10.0.0.1:5432"},
		wantErr:      [2]string{"directly: dial tcp: connect: no route to host", "directly: dial tcp: connect: no route to host"},
	}, {
		name: "port-forward alone", access: AccessPortForward,
		wantAttempts: []string{"port-forward ns/db-0 5432", "port-forward ns/db-0 5432"},
	}, {
		name: "auto in a cluster is direct", access: AccessAuto, inCluster: true, direct: timedOut,
		wantAttempts: []string{"direct 10.0.0.1:5432", "direct 10.0.0.1:5432"},
		wantErr:      [2]string{"directly: dial tcp: i/o timeout", "directly: dial tcp: i/o timeout"},
	}, {
		name: "auto where the pods are routed", access: AccessAuto,
		wantAttempts: []string{"direct 10.0.0.1:5432", "direct 10.0.0.1:5432"},
	}, {
		name: "auto where they are not: through the API server, then that first", access: AccessAuto, direct: unrouted, after: 59 * time.Second,
		wantAttempts: []string{"direct 10.0.0.1:5432", "port-forward ns/db-0 5432", "port-forward ns/db-0 5432"},
	}, {
		name: "auto, a direct dial that times out", access: AccessAuto, direct: timedOut,
		wantAttempts: []string{"direct 10.0.0.1:5432", "port-forward ns/db-0 5432", "port-forward ns/db-0 5432"},
	}, {
		name: "auto tries directly again after a minute", access: AccessAuto, direct: unrouted, after: time.Minute,
		wantAttempts: []string{"direct 10.0.0.1:5432", "port-forward ns/db-0 5432", "direct 10.0.0.1:5432", "port-forward ns/db-0 5432"},
	}, {
		name: "auto, a refusal is the server's answer: no tunnel", access: AccessAuto, direct: refused,
		wantAttempts: []string{"direct 10.0.0.1:5432", "direct 10.0.0.1:5432"},
		wantErr:      [2]string{"directly: dial tcp: connect: connection refused", "directly: dial tcp: connect: connection refused"},
	}, {
		name: "auto, neither path: both errors", access: AccessAuto, direct: unrouted, tunnel: errors.New("pods \"db-0\" is forbidden"),
		wantAttempts: []string{"direct 10.0.0.1:5432", "port-forward ns/db-0 5432", "direct 10.0.0.1:5432", "port-forward ns/db-0 5432"},
		wantErr: [2]string{
			"directly: dial tcp: connect: no route to host; through the API server: pods \"db-0\" is forbidden",
			"directly: dial tcp: connect: no route to host; through the API server: pods \"db-0\" is forbidden"},
	}, {
		name: "auto, an address no pod has", access: AccessAuto, direct: unrouted, addr: "10.0.0.9:5432",
		wantAttempts: []string{"direct 10.0.0.9:5432", "direct 10.0.0.9:5432"},
		wantErr: [2]string{
			"directly: dial tcp: connect: no route to host; through the API server: no pod has the address 10.0.0.9",
			"directly: dial tcp: connect: no route to host; through the API server: no pod has the address 10.0.0.9"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakePaths{direct: tc.direct, tuned: tc.tunnel}
			now := start
			d := New(Config{Access: tc.access, InCluster: tc.inCluster, Direct: f.Direct, Tunnels: f, PodOf: podOf, Now: func() time.Time { return now }})
			addr := tc.addr
			if addr == "" {
				addr = "10.0.0.1:5432"
			}
			for k := range 2 {
				c, err := d.DialContext(context.Background(), "tcp", addr)
				got := ""
				if err != nil {
					got = err.Error()
				} else {
					c.Close()
				}
				if got != tc.wantErr[k] {
					t.Errorf("dial %d: error %q, want %q", k+1, got, tc.wantErr[k])
				}
				now = now.Add(tc.after)
			}
			if strings.Join(f.attempts, "\n") != strings.Join(tc.wantAttempts, "\n") {
				t.Errorf("attempts:\n%s\nwant:\n%s", strings.Join(f.attempts, "\n"), strings.Join(tc.wantAttempts, "\n"))
			}
		})
	}
}

// An address reached through the API server whose tunnel fails is dialled
// directly again, and once that works, directly first.
func TestDialerBackToDirect(t *testing.T) {
	f := &fakePaths{direct: unrouted}
	d := New(Config{Access: AccessAuto, Direct: f.Direct, Tunnels: f, PodOf: podOf})
	for _, step := range []struct{ direct, tunnel error }{{unrouted, nil}, {nil, errors.New("tunnel broken")}, {nil, nil}} {
		f.direct, f.tuned = step.direct, step.tunnel
		c, err := d.DialContext(context.Background(), "tcp", "10.0.0.1:5432")
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	want := []string{"direct 10.0.0.1:5432", "port-forward ns/db-0 5432", "port-forward ns/db-0 5432", "direct 10.0.0.1:5432", "direct 10.0.0.1:5432"}
	if strings.Join(f.attempts, "\n") != strings.Join(want, "\n") {
		t.Errorf("attempts:\n%s\nwant:\n%s", strings.Join(f.attempts, "\n"), strings.Join(want, "\n"))
	}
}

func TestUnrouted(t *testing.T) {
	for err, want := range map[error]bool{
		unrouted: true, timedOut: true, refused: false, context.DeadlineExceeded: true,
		&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}: true,
		errors.New("x509: certificate signed by unknown authority"):                                   false,
	} {
		if got := Unrouted(err); got != want {
			t.Errorf("Unrouted(%v) = %v, want %v", err, got, want)
		}
	}
}

func TestPodOfIndexer(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{IndexPodIP: IndexByPodIP})
	for _, pod := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "old"}, Status: corev1.PodStatus{Phase: corev1.PodFailed, PodIP: "10.0.0.1"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db-0", UID: "uid-1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}}},
	} {
		// Held compact, as the controller's cache holds pods.
		if err := indexer.Add(cached.NewPod(pod)); err != nil {
			t.Fatal(err)
		}
	}
	of := PodOfIndexer(indexer)
	for ip, want := range map[string]Pod{"10.0.0.1": {"ns", "db-0", "uid-1"}, "fd00::1": {"ns", "db-0", "uid-1"}, "10.0.0.2": {}} {
		if got, ok := of(ip); got != want || ok != (want != Pod{}) {
			t.Errorf("pod of %s: %v %v, want %v", ip, got, ok, want)
		}
	}
}

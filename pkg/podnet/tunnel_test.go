package podnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
)

// kubelet is the pod's end of the port-forward protocol, over a real SPDY
// connection: for each request ID, an error stream and a data stream; the
// data goes to the pod's port on the loopback address, and a refusal to
// the error stream, as the kubelet's port-forward does. connects counts
// the connections made to it, and conns are their server ends.
type kubelet struct {
	connects atomic.Int32
	mu       sync.Mutex
	conns    []httpstream.Connection
}

func (k *kubelet) connect(Pod) (httpstream.Connection, error) {
	k.connects.Add(1)
	client, server := net.Pipe()
	sc, err := servePortForward(server)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.conns = append(k.conns, sc)
	k.mu.Unlock()
	return spdy.NewClientConnection(client)
}

// servePortForward serves the kubelet's end of the port-forward protocol
// on conn: each request ID's pair of streams is forwarded.
func servePortForward(conn net.Conn) (httpstream.Connection, error) {
	pairs := map[string][]httpstream.Stream{}
	var mu sync.Mutex
	return spdy.NewServerConnection(conn, func(s httpstream.Stream, replySent <-chan struct{}) error {
		id := s.Headers().Get(corev1.PortForwardRequestIDHeader)
		mu.Lock()
		pairs[id] = append(pairs[id], s)
		pair := pairs[id]
		mu.Unlock()
		if len(pair) == 2 {
			go forward(pair, replySent)
		}
		return nil
	})
}

func forward(pair []httpstream.Stream, replySent <-chan struct{}) {
	<-replySent
	errorStream, dataStream := pair[0], pair[1]
	if errorStream.Headers().Get(corev1.StreamType) != corev1.StreamTypeError {
		errorStream, dataStream = dataStream, errorStream
	}
	defer errorStream.Close()
	port := dataStream.Headers().Get(corev1.PortHeader)
	c, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintf(errorStream, "error forwarding port %s to pod: %v", port, err)
		_ = dataStream.Close()
		return
	}
	defer c.Close()
	go func() { _, _ = io.Copy(c, dataStream) }()
	_, _ = io.Copy(dataStream, c)
	_ = dataStream.Close()
}

// echo listens on the loopback address and writes back what it reads,
// upper-cased; its port.
func echo(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(strings.ToUpper(string(buf[:n])))); err != nil {
						return
					}
				}
			}()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read: %v", err)
	}
	if string(buf) != strings.ToUpper(msg) {
		t.Fatalf("read %q, want %q", buf, strings.ToUpper(msg))
	}
}

// Connections through one pod's tunnel share its upgraded connection;
// one made again once it broke; a refused port is the error of the first
// read; a deadline ends a read as a TCP connection's does.
func TestTunnels(t *testing.T) {
	k := &kubelet{}
	tunnels := NewTunnels(k.connect, nil)
	defer tunnels.Close()
	port := echo(t)
	pod := Pod{Namespace: "ns", Name: "db-0", UID: "uid-1"}
	ctx := context.Background()

	var conns []net.Conn
	for i := range 3 {
		c, err := tunnels.Dial(ctx, pod, port)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		roundTrip(t, c, fmt.Sprintf("select %d", i))
	}
	if n := k.connects.Load(); n != 1 {
		t.Errorf("three connections made %d tunnels, want 1", n)
	}
	if n := tunnels.Open(); n != 1 {
		t.Errorf("%d tunnels open, want 1", n)
	}

	// A deadline ends a read that waits.
	if err := conns[0].SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := conns[0].Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a read past its deadline: %v, want a deadline error", err)
	}
	for _, c := range conns {
		c.Close()
	}
	// Each connection's bytes, both ways, once it ended: 8 each way.
	for deadline := time.Now().Add(5 * time.Second); tunnels.Bytes() < 48 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if b, c := tunnels.Bytes(), tunnels.Connects(); b != 48 || c != 1 {
		t.Errorf("%d bytes through %d tunnels made, want 48 through 1", b, c)
	}

	// A port that refuses.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	_, closed, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	c, err := tunnels.Dial(ctx, pod, closed)
	if err != nil {
		t.Fatalf("dial of a refusing port: %v (the kubelet says so after the streams are open)", err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 1))
	if err == nil || !strings.Contains(err.Error(), "error forwarding port "+closed) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("first read through a refusing port: %v, want the kubelet's error", err)
	}
	c.Close()

	// The tunnel breaks (the API server went away): the next dial makes
	// another.
	k.mu.Lock()
	_ = k.conns[0].Close()
	k.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := tunnels.Dial(ctx, pod, port)
		if err == nil {
			roundTrip(t, c, "after")
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dial after the tunnel broke: %v", err)
		}
	}
	if n := k.connects.Load(); n != 2 {
		t.Errorf("%d tunnels made, want 2 (one again after it broke)", n)
	}

	// The pod's name taken by a new pod (its StatefulSet made it again):
	// a tunnel of its own, and the old pod's closed.
	next := Pod{Namespace: "ns", Name: "db-0", UID: "uid-2"}
	c, err = tunnels.Dial(ctx, next, port)
	if err != nil {
		t.Fatalf("dial of the new pod: %v", err)
	}
	roundTrip(t, c, "new pod")
	c.Close()
	if n := k.connects.Load(); n != 3 {
		t.Errorf("%d tunnels made, want 3 (one for the new pod of the name)", n)
	}
	if n := tunnels.Open(); n != 1 {
		t.Errorf("%d tunnels open, want 1 (the old pod's closed)", n)
	}
}

// A tunnel that cannot be made is an error of the dial, within its
// context, and is tried again at the next dial.
func TestTunnelsConnectFails(t *testing.T) {
	var calls atomic.Int32
	block := make(chan struct{})
	tunnels := NewTunnels(func(Pod) (httpstream.Connection, error) {
		if calls.Add(1) == 1 {
			<-block
		}
		return nil, fmt.Errorf(`pods "db-0" is forbidden: User "laptop" cannot create resource "pods/portforward"`)
	}, nil)
	pod := Pod{Namespace: "ns", Name: "db-0"}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := tunnels.Dial(ctx, pod, "5432"); err == nil || !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Errorf("dial while the tunnel is made past the context: %v", err)
	}
	close(block)
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() < 2 && time.Now().Before(deadline) {
		_, err := tunnels.Dial(context.Background(), pod, "5432")
		if calls.Load() >= 2 && (err == nil || !strings.Contains(err.Error(), `pod ns/db-0: connecting to its portforward subresource: pods "db-0" is forbidden`)) {
			t.Errorf("dial refused by the API server: %v", err)
		}
	}
	if calls.Load() < 2 {
		t.Errorf("a failed tunnel was not tried again")
	}
}

// blackHole is a TCP proxy in front of a kubelet-like SPDY server
// (forward's protocol); freeze makes the connections it carries at that
// moment a black hole: open, never closed, nothing goes through (a NAT
// that forgot them), while new ones go through.
type blackHole struct {
	addr     string
	connects atomic.Int32
	mu       sync.Mutex
	// open holds, for each connection carried, the channel that freezes it.
	open []chan struct{}
}

func newBlackHole(t *testing.T) *blackHole {
	server, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	go func() {
		for {
			c, err := server.Accept()
			if err != nil {
				return
			}
			_, _ = servePortForward(c)
		}
	}()
	proxy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{addr: proxy.Addr().String()}
	t.Cleanup(func() {
		proxy.Close()
		b.mu.Lock()
		for _, f := range b.open {
			close(f)
		}
		b.open = nil
		b.mu.Unlock()
	})
	go func() {
		for {
			in, err := proxy.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", server.Addr().String())
			if err != nil {
				in.Close()
				continue
			}
			frozen := make(chan struct{})
			b.mu.Lock()
			b.open = append(b.open, frozen)
			b.mu.Unlock()
			for _, p := range [][2]net.Conn{{in, out}, {out, in}} {
				go func(from, to net.Conn) {
					buf := make([]byte, 32<<10)
					for {
						n, err := from.Read(buf)
						select {
						case <-frozen:
							// Held, never delivered, never closed.
							<-make(chan struct{})
						default:
						}
						if err != nil {
							to.Close()
							return
						}
						if _, err := to.Write(buf[:n]); err != nil {
							return
						}
					}
				}(p[0], p[1])
			}
		}
	}()
	return b
}

func (b *blackHole) connect(Pod) (httpstream.Connection, error) {
	b.connects.Add(1)
	c, err := net.Dial("tcp", b.addr)
	if err != nil {
		return nil, err
	}
	conn, err := spdy.NewClientConnection(c)
	if err != nil {
		return nil, err
	}
	return &closeRecorder{Connection: conn, closed: make(chan struct{})}, nil
}

// closeRecorder records that a tunnel was closed. (spdystream's Close
// ends the connection itself only once its streams ended: on a black hole,
// when TCP's keep-alive gives up on it.)
type closeRecorder struct {
	httpstream.Connection
	once   sync.Once
	closed chan struct{}
}

func (c *closeRecorder) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

// freeze makes every connection open now a black hole.
func (b *blackHole) freeze() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range b.open {
		close(f)
	}
	b.open = nil
}

// A tunnel that died without breaking (a black hole on the way) costs a
// dial StreamTimeout, not the dial: the dial opens its streams on a new
// tunnel, within its own context (pgsql's and mysqlsql's 3 s). The dead
// tunnel is closed once the connection still open through it ends.
func TestTunnelsDeadTunnel(t *testing.T) {
	b := newBlackHole(t)
	tunnels := NewTunnels(b.connect, nil)
	tunnels.StreamTimeout = 200 * time.Millisecond
	defer tunnels.Close()
	port := echo(t)
	pod := Pod{Namespace: "ns", Name: "db-0", UID: "uid-1"}

	before, err := tunnels.Dial(context.Background(), pod, port)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, before, "before")
	b.freeze()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	c, err := tunnels.Dial(ctx, pod, port)
	if err != nil {
		t.Fatalf("dial after the tunnel died: %v, want one through a new tunnel within the dial's 3 s", err)
	}
	t.Logf("dial through a dead tunnel: opened on a new one after %s (StreamTimeout %s)", time.Since(start).Round(time.Millisecond), tunnels.StreamTimeout)
	roundTrip(t, c, "after")
	c.Close()
	if n := b.connects.Load(); n != 2 {
		t.Errorf("%d tunnels made, want 2 (one again after the first died)", n)
	}

	// The next dial reuses the new tunnel.
	c, err = tunnels.Dial(ctx, pod, port)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, "again")
	c.Close()
	if n := b.connects.Load(); n != 2 {
		t.Errorf("%d tunnels made, want 2", n)
	}

	// The dead tunnel stays open while a connection goes through it, and
	// is closed when that ends.
	dead := before.(*streamConn).tunnel.(*closeRecorder)
	select {
	case <-dead.closed:
		t.Fatalf("the dead tunnel was closed under a connection still open through it")
	case <-time.After(100 * time.Millisecond):
	}
	before.Close()
	select {
	case <-dead.closed:
	case <-time.After(5 * time.Second):
		t.Errorf("the dead tunnel was not closed once its last connection ended")
	}
}

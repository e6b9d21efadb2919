package podnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// ConnectFunc upgrades a connection to a pod's portforward subresource,
// over which each dial is a pair of streams.
type ConnectFunc func(pod Pod) (httpstream.Connection, error)

// Tunnels keeps one upgraded connection per pod to its portforward
// subresource, made at its first dial and reused by the next ones (each a
// pair of streams over it), and made again once it breaks. A connection
// not used for IdleAfter is closed, and one to a pod whose name a new pod
// took (a StatefulSet's) at that pod's first dial.
//
// A tunnel can die without breaking: a NAT or a proxy on the way forgets
// it, the API server's connection to the kubelet hangs. Its streams then
// never open. A tunnel made earlier that does not open a dial's streams
// within StreamTimeout is retired (no dial uses it again; it is closed once
// the connections through it end), and the dial is tried once more on a
// new tunnel, within its own context: a dead tunnel costs a dial
// StreamTimeout, once, not the dial.
type Tunnels struct {
	connect ConnectFunc
	// IdleAfter is how long a pod's connection is kept unused (5 minutes
	// when zero).
	IdleAfter time.Duration
	// StreamTimeout bounds how long a tunnel made earlier may take to open
	// a dial's streams, a round trip to the kubelet (1 s when zero).
	StreamTimeout time.Duration
	now           func() time.Time
	requestID     atomic.Int64
	// connects counts the upgraded connections made (each an API request),
	// and bytes what went through the tunnels, both ways.
	connects, bytes atomic.Int64

	mu    sync.Mutex
	byPod map[Pod]*tunnel
}

type tunnel struct {
	// ready is closed once conn or err is set.
	ready chan struct{}
	conn  httpstream.Connection
	err   error
	used  time.Time
	// active counts the connections open through it; a retired tunnel
	// (no longer in byPod) is closed when it falls to 0.
	active  int
	retired bool
}

// NewTunnels returns Tunnels that connect with connect.
func NewTunnels(connect ConnectFunc, now func() time.Time) *Tunnels {
	if now == nil {
		now = time.Now
	}
	return &Tunnels{connect: connect, now: now, byPod: map[Pod]*tunnel{}}
}

// ConnectThroughAPIServer is the ConnectFunc of the API server at cfg,
// whose core/v1 REST client is core: over WebSocket, or SPDY where the API
// server does not upgrade to it, as kubectl port-forward connects. It
// needs create on pods/portforward.
func ConnectThroughAPIServer(cfg *rest.Config, core rest.Interface) (ConnectFunc, error) {
	spdyTransport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: spdyTransport}
	return func(pod Pod) (httpstream.Connection, error) {
		u := core.Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward").URL()
		websocket, err := portforward.NewSPDYOverWebsocketDialer(u, cfg)
		if err != nil {
			return nil, err
		}
		dialer := portforward.NewFallbackDialer(websocket, spdy.NewDialer(upgrader, client, http.MethodPost, u), func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
		conn, _, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
		return conn, err
	}, nil
}

// Dial opens a connection to port of pod through its tunnel. The server's
// refusal, which the kubelet reports after the streams are open, is the
// error of the connection's first read.
func (t *Tunnels) Dial(ctx context.Context, pod Pod, port string) (net.Conn, error) {
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, fmt.Errorf("port %q: %w", port, err)
	}
	for attempt := 0; ; attempt++ {
		tn, made, err := t.get(ctx, pod)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		within := ctx
		cancel := context.CancelFunc(func() {})
		if !made && attempt == 0 {
			within, cancel = context.WithTimeout(ctx, t.streamTimeout())
		}
		c, err := t.open(within, tn, port)
		cancel()
		if err == nil {
			return c, nil
		}
		// A connection that cannot open streams in time is dead or
		// broken: no dial uses it again.
		t.retire(pod, tn)
		if made || attempt > 0 || ctx.Err() != nil {
			return nil, fmt.Errorf("pod %s/%s port %s: %w", pod.Namespace, pod.Name, port, err)
		}
	}
}

func (t *Tunnels) streamTimeout() time.Duration {
	if t.StreamTimeout == 0 {
		return time.Second
	}
	return t.StreamTimeout
}

// get returns pod's tunnel, made if there is none (one dial makes it, the
// others wait for it); made says it was made for this dial or while it
// waited.
func (t *Tunnels) get(ctx context.Context, pod Pod) (tn *tunnel, made bool, err error) {
	idle := t.IdleAfter
	if idle == 0 {
		idle = 5 * time.Minute
	}
	now := t.now()
	t.mu.Lock()
	for p, other := range t.byPod {
		// Unused for long, or a pod gone whose name pod took.
		gone := p.Namespace == pod.Namespace && p.Name == pod.Name && p.UID != pod.UID
		if p != pod && other.conn != nil && (gone || now.Sub(other.used) > idle) {
			t.retireLocked(p, other)
		}
	}
	tn, ok := t.byPod[pod]
	if ok && tn.conn != nil {
		select {
		case <-tn.conn.CloseChan():
			t.retireLocked(pod, tn)
			ok = false
		default:
		}
	}
	if !ok {
		tn = &tunnel{ready: make(chan struct{})}
		t.byPod[pod] = tn
		go t.make(pod, tn)
	}
	tn.used = now
	t.mu.Unlock()

	select {
	case <-tn.ready:
		// Made for this dial, or while it waited: not one that may have
		// died since.
		made = !ok
	default:
		made = true
		select {
		case <-tn.ready:
		case <-ctx.Done():
			return nil, false, fmt.Errorf("connecting to its portforward subresource: %w", ctx.Err())
		}
	}
	if tn.err != nil {
		return nil, false, tn.err
	}
	return tn, made, nil
}

// make connects pod's tunnel; a failure is forgotten at once, so that the
// next dial tries again.
func (t *Tunnels) make(pod Pod, tn *tunnel) {
	t.connects.Add(1)
	conn, err := t.connect(pod)
	t.mu.Lock()
	tn.conn, tn.err = conn, err
	if err != nil {
		tn.err = fmt.Errorf("connecting to its portforward subresource: %w", err)
		if t.byPod[pod] == tn {
			delete(t.byPod, pod)
		}
	}
	t.mu.Unlock()
	close(tn.ready)
}

// retire takes pod's tunnel tn out of use: it is closed once no
// connection goes through it.
func (t *Tunnels) retire(pod Pod, tn *tunnel) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.retireLocked(pod, tn)
}

func (t *Tunnels) retireLocked(pod Pod, tn *tunnel) {
	if t.byPod[pod] == tn {
		delete(t.byPod, pod)
	}
	tn.retired = true
	if tn.active == 0 && tn.conn != nil {
		// Not waited for: closing a dead connection may block on it.
		go func() { _ = tn.conn.Close() }()
	}
}

// ended is called when a connection through tn ends.
func (t *Tunnels) ended(tn *tunnel) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tn.active--
	if tn.retired && tn.active == 0 && tn.conn != nil {
		go func() { _ = tn.conn.Close() }()
	}
}

// Close closes every tunnel.
func (t *Tunnels) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for p, tn := range t.byPod {
		if tn.conn != nil {
			_ = tn.conn.Close()
		}
		tn.retired = true
		delete(t.byPod, p)
	}
}

// Connects is how many upgraded connections were made to pods'
// portforward subresources (one API request each), and Bytes how many
// bytes went through them, both ways.
func (t *Tunnels) Connects() int64 { return t.connects.Load() }
func (t *Tunnels) Bytes() int64    { return t.bytes.Load() }

// Open is how many tunnels are open.
func (t *Tunnels) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, tn := range t.byPod {
		if tn.conn != nil {
			n++
		}
	}
	return n
}

// open makes the pair of streams of one connection to port through the
// tunnel tn (the kubelet's port-forward protocol: an error stream, then a
// data stream, with one request ID), within ctx.
func (t *Tunnels) open(ctx context.Context, tn *tunnel, port string) (net.Conn, error) {
	conn := tn.conn
	t.mu.Lock()
	tn.active++
	t.mu.Unlock()
	type opened struct {
		errorStream, dataStream httpstream.Stream
		err                     error
	}
	done := make(chan opened, 1)
	go func() {
		headers := http.Header{}
		headers.Set(corev1.StreamType, corev1.StreamTypeError)
		headers.Set(corev1.PortHeader, port)
		headers.Set(corev1.PortForwardRequestIDHeader, strconv.FormatInt(t.requestID.Add(1), 10))
		errorStream, err := conn.CreateStream(headers)
		if err != nil {
			done <- opened{err: fmt.Errorf("creating its error stream: %w", err)}
			return
		}
		// Nothing is written to it.
		_ = errorStream.Close()
		headers.Set(corev1.StreamType, corev1.StreamTypeData)
		dataStream, err := conn.CreateStream(headers)
		if err != nil {
			conn.RemoveStreams(errorStream)
			done <- opened{err: fmt.Errorf("creating its data stream: %w", err)}
			return
		}
		done <- opened{errorStream: errorStream, dataStream: dataStream}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			t.ended(tn)
			return nil, o.err
		}
		return newStreamConn(conn, o.errorStream, o.dataStream, &t.bytes, func() { t.ended(tn) }), nil
	case <-ctx.Done():
		go func() {
			// Streams that open late are not used.
			if o := <-done; o.err == nil {
				conn.RemoveStreams(o.errorStream, o.dataStream)
				_ = o.dataStream.Reset()
			}
		}()
		t.ended(tn)
		return nil, fmt.Errorf("opening its streams: %w", ctx.Err())
	}
}

// streamConn is one connection through a tunnel: the data stream, bridged
// to one end of a net.Pipe (which keeps deadlines as a TCP connection
// does), and the kubelet's error, which its reads return once the stream
// ends.
type streamConn struct {
	net.Conn
	// tunnel is the connection it goes through.
	tunnel httpstream.Connection
	mu     sync.Mutex
	failed error
	close  func()
}

// ended is called once when the connection ends.
func newStreamConn(conn httpstream.Connection, errorStream, dataStream httpstream.Stream, bytes *atomic.Int64, ended func()) *streamConn {
	local, remote := net.Pipe()
	c := &streamConn{Conn: local, tunnel: conn}
	var once sync.Once
	c.close = func() {
		once.Do(func() {
			_ = remote.Close()
			_ = dataStream.Reset()
			conn.RemoveStreams(errorStream, dataStream)
			ended()
		})
	}
	errorRead := make(chan struct{})
	go func() {
		// The kubelet writes to the error stream only when it fails to
		// forward (the server refused, the pod is gone), and closes it
		// when the connection ends.
		msg, _ := io.ReadAll(errorStream)
		if len(msg) > 0 {
			c.mu.Lock()
			c.failed = errors.New(string(msg))
			c.mu.Unlock()
		}
		close(errorRead)
		if len(msg) > 0 {
			c.close()
		}
	}()
	go func() {
		n, _ := io.Copy(remote, dataStream)
		bytes.Add(n)
		// The data stream ends before the error is read: the reads
		// return the error, not the end of the stream.
		select {
		case <-errorRead:
		case <-time.After(time.Second):
		}
		c.close()
	}()
	go func() {
		n, _ := io.Copy(dataStream, remote)
		bytes.Add(n)
		_ = dataStream.Close()
	}()
	return c
}

func (c *streamConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.mu.Lock()
		failed := c.failed
		c.mu.Unlock()
		if failed != nil {
			return n, failed
		}
	}
	return n, err
}

func (c *streamConn) Close() error {
	err := c.Conn.Close()
	c.close()
	return err
}

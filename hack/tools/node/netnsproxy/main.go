// Command netnsproxy lets the real node, which runs in a network namespace
// of its own, reach the API server that listens on the host's loopback only.
// It listens on an address inside the namespace (its socket is made there)
// and connects every accepted connection to an address in the namespace it
// was started in. Nothing listens on any host interface.
//
// Usage: netnsproxy -netns /run/netns/NAME -listen 127.0.0.1:6443 -connect 127.0.0.1:6443 [-id ID]
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

func main() {
	netns := flag.String("netns", "", "network namespace to listen in (a path such as /run/netns/NAME)")
	listen := flag.String("listen", "", "address to listen on, inside the namespace")
	connect := flag.String("connect", "", "address to connect to, in this process's own namespace")
	// The caller's identifier for this process, shown in its log (local-down.sh
	// recognizes the process by it).
	id := flag.String("id", "", "an identifier, shown in the log")
	flag.Parse()
	if *netns == "" || *listen == "" || *connect == "" {
		fmt.Fprintln(os.Stderr, "usage: netnsproxy -netns PATH -listen ADDR -connect ADDR")
		os.Exit(2)
	}
	ln, err := listenIn(*netns, *listen)
	if err != nil {
		log.Fatalf("netnsproxy: listening on %s in %s: %v", *listen, *netns, err)
	}
	log.Printf("netnsproxy %s: %s in %s -> %s", *id, *listen, *netns, *connect)
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatalf("netnsproxy: accept: %v", err)
		}
		go proxy(c, *connect)
	}
}

// listenIn makes the listening socket inside the namespace: the thread
// enters it, creates the socket and returns. A socket stays in the
// namespace it was made in.
func listenIn(netns, addr string) (net.Listener, error) {
	runtime.LockOSThread()
	// The thread is not unlocked if returning to the host namespace
	// fails: it then dies with this goroutine instead of being reused.
	self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return nil, err
	}
	defer self.Close()
	target, err := os.Open(netns)
	if err != nil {
		return nil, err
	}
	defer target.Close()
	if err := setns(target); err != nil {
		return nil, fmt.Errorf("entering %s: %w", netns, err)
	}
	ln, lerr := net.Listen("tcp", addr)
	if err := setns(self); err != nil {
		return nil, fmt.Errorf("returning to the host namespace: %w", err)
	}
	runtime.UnlockOSThread()
	return ln, lerr
}

func setns(f *os.File) error {
	return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
}

func proxy(c net.Conn, to string) {
	defer c.Close()
	up, err := net.Dial("tcp", to)
	if err != nil {
		log.Printf("netnsproxy: dialing %s: %v", to, err)
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); closeWrite(up); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if t, ok := c.(*net.TCPConn); ok {
		_ = t.CloseWrite()
	}
}

//go:build e2e

package e2eutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
)

// The real-node tests run their clients' scripts in pods with kubectl
// exec: in a clean clone's .ci/run at c635887 a kubectl process cost 0.18
// CPU-seconds (process accounting; 939 of them in the real-node suite, on
// cores it kept 95% busy), and about 300 of those were exec. A command
// run in a pod is served in this process instead, by the one client of
// inprocess.go, through the same API (the pod's exec subresource, over a
// WebSocket, as kubectl 1.37 asks), with the output kubectl gives: the
// command's standard output and error in one stream, and on a non-zero
// exit kubectl's own last line and an error.

// execCommand is a kubectl exec that can be served in process.
type execCommand struct {
	namespace, pod, container string
	// stdin is whether the command reads the standard input given (-i).
	stdin   bool
	command []string
}

// parseExec recognises `exec [-i] POD [-c CONTAINER] [-n NS] -- COMMAND...`,
// the flags before or after the words, as the suites write it. ok is false
// for anything else: another flag (-t, a kind/name), no command.
func parseExec(args []string) (ec execCommand, ok bool) {
	valued := map[string]*string{
		"-n": &ec.namespace, "--namespace": &ec.namespace,
		"-c": &ec.container, "--container": &ec.container,
	}
	if i := slices.Index(args, "--"); i >= 0 {
		args, ec.command = args[:i], args[i+1:]
	}
	words, ok := splitArgs(args, valued, func(flag, _ string, hasValue bool) bool {
		if (flag == "-i" || flag == "--stdin") && !hasValue {
			ec.stdin = true
			return true
		}
		return false
	})
	if !ok {
		return ec, false
	}
	if len(words) != 2 || words[0] != "exec" || strings.Contains(words[1], "/") || len(ec.command) == 0 {
		return ec, false
	}
	ec.pod = words[1]
	return ec, true
}

// errExec is the error of a command served in process that ended with a
// non-zero exit: kubectl's exit status is the command's.
type errExec struct{ code int }

func (e errExec) Error() string {
	return fmt.Sprintf("exit status %d (command served in process, as kubectl exec would)", e.code)
}

// execInProcess runs ec in its pod as kubectl exec would, stdin its
// standard input when ec.stdin. handled is false, and nothing has run,
// when kubectl is to run it instead: the client cannot be made, the pod
// cannot be read, does not run, has no container of the name given, or
// has several and none is named (kubectl would name the one it chose);
// kubectl then says why.
func execInProcess(ec execCommand, stdin string) (out []byte, handled bool, err error) {
	if inProcessClient() != nil {
		return nil, false, nil
	}
	ns := ec.namespace
	if ns == "" {
		ns = inProcess.namespace
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	pod, err := inProcess.core.CoreV1().Pods(ns).Get(ctx, ec.pod, metav1.GetOptions{})
	cancel()
	if err != nil || pod.Status.Phase != corev1.PodRunning {
		return nil, false, nil
	}
	container := ec.container
	switch {
	case container == "" && len(pod.Spec.Containers) == 1:
		container = pod.Spec.Containers[0].Name
	case container == "" || !slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == container }):
		return nil, false, nil
	}
	req := inProcess.core.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(ec.pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container,
			Command:   ec.command,
			Stdin:     ec.stdin,
			Stdout:    true,
			Stderr:    true,
		}, scheme.ParameterCodec)
	executor, err := remotecommand.NewWebSocketExecutor(inProcess.config, "GET", req.URL().String())
	if err != nil {
		return nil, false, nil
	}
	var combined lockedBuffer
	opts := remotecommand.StreamOptions{Stdout: &combined, Stderr: &combined}
	if ec.stdin {
		opts.Stdin = strings.NewReader(stdin)
	}
	// No deadline: kubectl exec sets none, and a script may run for minutes.
	err = executor.StreamWithContext(context.Background(), opts)
	var exit exec.CodeExitError
	switch {
	case err == nil:
		return combined.Bytes(), true, nil
	case errors.As(err, &exit):
		combined.WriteString(fmt.Sprintf("command terminated with exit code %d\n", exit.Code))
		return combined.Bytes(), true, errExec{code: exit.Code}
	default:
		// The stream failed (the API server or the kubelet): what ran of
		// the command, if it started, is not known, so it is not run
		// again. kubectl prints the error and exits 1.
		combined.WriteString(fmt.Sprintf("error: %v\n", err))
		return combined.Bytes(), true, errExec{code: 1}
	}
}

// lockedBuffer is one stream of a command's standard output and error,
// which remotecommand copies from two goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

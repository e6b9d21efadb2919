//go:build e2e

package realnode

import (
	"testing"

	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// The commands the tests run in pods (kubectl exec) are served in the test
// process, not by a kubectl process each (e2eutil/exec.go). Each form the
// suite uses gives what kubectl gives, byte for byte, with the same
// success or failure: standard output and error in one stream, a
// container named, a non-zero exit, standard input, and a container the
// pod does not have.
func TestCommandsServedInProcessAreKubectls(t *testing.T) {
	parallel(t)
	ns := clientsNamespace
	pod := clientPodOf(t, postgresImage)
	for _, tc := range []struct {
		stdin string
		args  []string
	}{
		// The pauses keep the two streams' order the same in both.
		{"", []string{"-n", ns, "exec", pod, "--", "sh", "-c", "echo out; sleep 0.3; echo err >&2; sleep 0.3; echo out again"}},
		{"", []string{"-n", ns, "exec", pod, "-c", "client", "--", "sh", "-c", "echo before; exit 3"}},
		{"", []string{"-n", ns, "exec", pod, "--", "ls", "/absent"}},
		{"line one\nline two\n", []string{"-n", ns, "exec", "-i", pod, "--", "sh", "-c", "cat; echo read"}},
		{"", []string{"-n", ns, "exec", pod, "-c", "absent", "--", "true"}},
	} {
		if d := e2eutil.DifferenceFromKubectl(tc.stdin, tc.args...); d != "" {
			t.Error(d)
		}
	}
}

//go:build e2e

package e2eutil

import (
	"reflect"
	"testing"
)

func TestParseExec(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want *execCommand // nil: not served in process
	}{
		{[]string{"-n", "ns", "exec", "-i", "client-1", "--", "sh", "-c", "eval \"$(cat)\""},
			&execCommand{namespace: "ns", pod: "client-1", stdin: true, command: []string{"sh", "-c", "eval \"$(cat)\""}}},
		{[]string{"-n", "ns", "exec", "db-0", "-c", "postgresql", "--", "psql", "-tAc", "SELECT 1"},
			&execCommand{namespace: "ns", pod: "db-0", container: "postgresql", command: []string{"psql", "-tAc", "SELECT 1"}}},
		// Flags after the words, and = forms; what follows -- is the command's, flags too.
		{[]string{"exec", "p", "--namespace=ns", "--container=c", "--stdin", "--", "ls", "-n", "-c"},
			&execCommand{namespace: "ns", pod: "p", container: "c", stdin: true, command: []string{"ls", "-n", "-c"}}},

		// Left to kubectl.
		{[]string{"-n", "ns", "exec", "p", "-t", "--", "sh"}, nil},                   // a terminal
		{[]string{"-n", "ns", "exec", "-it", "p", "--", "sh"}, nil},                  // a terminal
		{[]string{"-n", "ns", "exec", "deploy/x", "--", "sh"}, nil},                  // kind/name
		{[]string{"-n", "ns", "exec", "p"}, nil},                                     // no command
		{[]string{"-n", "ns", "exec", "p", "--"}, nil},                               // no command
		{[]string{"-n", "ns", "exec", "p", "ls"}, nil},                               // a command without --
		{[]string{"-n", "ns", "get", "pod", "p", "--", "x"}, nil},                    // another verb
		{[]string{"-n", "ns", "exec", "p", "-c"}, nil},                               // -c without its value
		{[]string{"-n", "ns", "exec", "p", "--request-timeout=1s", "--", "ls"}, nil}, // another flag
	} {
		got, ok := parseExec(tt.args)
		if tt.want == nil {
			if ok {
				t.Errorf("parseExec(%q) = %+v, want it left to kubectl", tt.args, got)
			}
			continue
		}
		if !ok || !reflect.DeepEqual(got, *tt.want) {
			t.Errorf("parseExec(%q) = %+v, %t; want %+v", tt.args, got, ok, *tt.want)
		}
	}
}

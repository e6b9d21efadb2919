//go:build e2e

package e2eutil

import (
	"reflect"
	"testing"
)

func TestParseRead(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want readCommand // verb "": not served in process
	}{
		{[]string{"-n", "ns", "get", "database", "orders", "-o", "json"},
			readCommand{verb: "get", resource: "database", name: "orders", namespace: "ns", output: "json", tail: -1}},
		{[]string{"get", "pods", "--namespace=ns", "-l", "app=x", "-o=json"},
			readCommand{verb: "get", resource: "pods", namespace: "ns", selector: "app=x", output: "json", tail: -1}},
		{[]string{"-n", "ns", "get", "pod", "c", "-o", "jsonpath={.status.phase}"},
			readCommand{verb: "get", resource: "pod", name: "c", namespace: "ns", output: "jsonpath", jsonPath: "{.status.phase}", tail: -1}},
		// A template that holds "=" keeps it.
		{[]string{"get", "crd", "x", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`},
			readCommand{verb: "get", resource: "crd", name: "x", output: "jsonpath", jsonPath: `{.status.conditions[?(@.type=="Established")].status}`, tail: -1}},
		{[]string{"-n", "ns", "logs", "writer"},
			readCommand{verb: "logs", name: "writer", namespace: "ns", tail: -1}},
		{[]string{"-n", "ns", "logs", "p", "-c", "mysql", "--tail=40"},
			readCommand{verb: "logs", name: "p", namespace: "ns", container: "mysql", tail: 40}},

		// Left to kubectl.
		{[]string{"-n", "ns", "get", "pods"}, readCommand{}},                                  // a table
		{[]string{"-n", "ns", "get", "pods", "-o", "wide"}, readCommand{}},                    // a table
		{[]string{"-n", "ns", "get", "db,pod", "-o", "json"}, readCommand{}},                  // several resources
		{[]string{"-n", "ns", "get", "pod/x", "-o", "json"}, readCommand{}},                   // kind/name
		{[]string{"-n", "ns", "get", "pods", "-A", "-o", "json"}, readCommand{}},              // another flag
		{[]string{"-n", "ns", "get", "pod", "x", "-l", "a=b", "-o", "json"}, readCommand{}},   // name and selector
		{[]string{"get", "--raw", "/metrics"}, readCommand{}},                                 // raw
		{[]string{"-n", "ns", "logs", "p", "--previous"}, readCommand{}},                      // the last container's
		{[]string{"-n", "ns", "logs", "p", "--tail", "40"}, readCommand{}},                    // --tail takes =N only
		{[]string{"-n", "ns", "logs", "deploy/x"}, readCommand{}},                             // kind/name
		{[]string{"-n", "ns", "delete", "pod", "x"}, readCommand{}},                           // a write
		{[]string{"-n", "ns", "get", "pod", "x", "-o", "jsonpath="}, readCommand{}},           // no template
		{[]string{"-n"}, readCommand{}},                                                       // no value
		{[]string{"-n", "ns", "get", "pod", "x", "-o", "json", "-c", "c"}, readCommand{}},     // logs' flag
		{[]string{"-n", "ns", "get", "pod", "x", "y", "z", "-o", "json"}, readCommand{}},      // too many words
		{[]string{"-n", "ns", "get", "pod", "x", "-o", "json", "--tail=1"}, readCommand{}},    // logs' flag
		{[]string{"-n", "ns", "logs", "p", "-o", "json"}, readCommand{}},                      // get's flag
		{[]string{"-n", "ns", "logs", "p", "--tail=x"}, readCommand{}},                        // not a number
		{[]string{"-n", "ns", "get", "pod", "x", "-o", "custom-columns=A:.a"}, readCommand{}}, // a table
	} {
		got, ok := parseRead(tt.args)
		if ok != (tt.want.verb != "") || (ok && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("parseRead(%q) = %+v, %v; want %+v, %v", tt.args, got, ok, tt.want, tt.want.verb != "")
		}
	}
}

//go:build e2e

package e2e

import (
	"testing"

	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// The reads the suites poll with are served in the test process, not by a
// kubectl process each (e2eutil/readargs.go). Each form they use gives
// what kubectl gives, byte for byte, with the same success or failure:
// one object and a list as json, JSONPath of one object and of a list, a
// cluster-scoped object, a CRD by its short name, and an object that does
// not exist.
func TestReadsServedInProcessAreKubectls(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	e2eutil.KubectlIn(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: one, labels: {read: "yes"}}
data: {k: "first value"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: two, labels: {read: "yes"}}
data: {k: "second"}
`, "-n", ns, "create", "-f", "-")
	for _, args := range [][]string{
		{"-n", ns, "get", "configmap", "one", "-o", "json"},
		{"-n", ns, "get", "cm", "-l", "read=yes", "-o", "json"},
		{"get", "configmaps", "--namespace=" + ns, "--selector=read=absent", "-o", "json"},
		{"-n", ns, "get", "configmap", "one", "-o", "jsonpath={.data.k}"},
		{"-n", ns, "get", "configmaps", "-l", "read=yes", "-o", `jsonpath={range .items[*]}{.metadata.name}={.data.k}{"\n"}{end}`},
		{"-n", ns, "get", "configmap", "one", "-o", "jsonpath={.data.absent}"},
		{"get", "namespace", ns, "-o", "json"},
		{"get", "crd", "databases.dbcontroller.io", "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`},
		{"-n", ns, "get", "database", "absent", "-o", "json"},
		{"-n", ns, "get", "db", "-o", "json"},
	} {
		if d := e2eutil.DifferenceFromKubectl("", args...); d != "" {
			t.Error(d)
		}
	}
}

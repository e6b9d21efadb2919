//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// serverArgs are the arguments of the server of the StatefulSet name's
// template; nil while there is none (the controller makes it soon after
// the Database).
func serverArgs(ns, name string) []string {
	var sts appsv1.StatefulSet
	if err := e2eutil.TryGetJSON(&sts, "-n", ns, "get", "statefulset", name); err != nil || len(sts.Spec.Template.Spec.Containers) == 0 {
		return nil
	}
	return sts.Spec.Template.Spec.Containers[0].Args
}

// A new Database's parameters read at start reach its pods' command line
// (the others are set on the running servers, which kwok's pods are not:
// the condition says the servers did not answer). A change of one read at
// start waits for a server to check it: with none that answers, the pods
// keep what they have. The schema refuses the controller's parameters by
// name, for every engine and for MySQL's and MongoDB's own, and names not
// as the engine's servers name them.
// postgresTLSArgs follow a PostgreSQL server's parameters on its command
// line: TLS is on by default.
var postgresTLSArgs = []string{"-c", "ssl=on", "-c", "ssl_cert_file=/etc/dbc-tls/tls.crt", "-c", "ssl_key_file=/etc/dbc-tls/tls.key",
	"-c", "hba_file=/etc/dbc-tls/pg_hba.conf"}

func TestParameters(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	createDB(t, ns, dbYAML("tuned", "postgresql", "16", 1, "  parameters:\n    shared_buffers: 256MB\n    work_mem: 64MB\n"))

	tunedArgs := func() []string { return serverArgs(ns, "tuned") }
	e2eutil.Eventually(t, converge, "shared_buffers on the server's command line, and a word on the others", func() (bool, string) {
		db := e2eutil.GetDB(t, ns, "tuned")
		c := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionParametersApplied)
		ps := db.Status.Parameters
		ok := slices.Equal(tunedArgs(), append([]string{"postgres", "-c", "shared_buffers=256MB"}, postgresTLSArgs...)) &&
			ps != nil && ps.Start["shared_buffers"] == "256MB" && len(ps.Start) == 1 &&
			c != nil && c.Reason == "Pending" && strings.Contains(c.Message, "spec.parameters wait for the servers to take them: ")
		return ok, fmt.Sprintf("args %q, status.parameters %+v, condition %+v", tunedArgs(), ps, c)
	})

	e2eutil.Kubectl(t, "-n", ns, "patch", "db/tuned", "--type=merge", "-p", `{"spec":{"parameters":{"shared_buffers":"512MB"}}}`)
	generation := e2eutil.GetDB(t, ns, "tuned").Generation
	e2eutil.Eventually(t, converge, "the change seen", func() (bool, string) {
		c := meta.FindStatusCondition(e2eutil.GetDB(t, ns, "tuned").Status.Conditions, dbv1alpha1.ConditionParametersApplied)
		return c != nil && c.ObservedGeneration == generation, fmt.Sprintf("%+v", c)
	})
	if args := tunedArgs(); !slices.Equal(args, append([]string{"postgres", "-c", "shared_buffers=256MB"}, postgresTLSArgs...)) {
		t.Errorf("server arguments %q after a change no server checked: want the ones it had", args)
	}

	for _, tt := range []struct{ patch, wantErr string }{
		{`{"spec":{"parameters":{"port":"5433"}}}`, "parameters may not set port: the controller sets it, for the pods"},
		{`{"spec":{"parameters":{"archive_command":"true"}}}`, "parameters may not set archive_command"},
		{`{"spec":{"parameters":{"Work_Mem":"1MB"}}}`, "parameters are named as the server names them, in lower case"},
		{`{"spec":{"parameters":{"work_mem":null,"shared_buffers":null,"a.b.c":"1"}}}`, "parameters are named as the server names them"},
	} {
		out, err := e2eutil.KubectlRun("", "-n", ns, "patch", "db/tuned", "--type=merge", "-p", tt.patch)
		if err == nil || !strings.Contains(string(out), tt.wantErr) {
			t.Errorf("patch %s: err %v, output %q; want refused with %q", tt.patch, err, out, tt.wantErr)
		}
	}
	for _, tt := range []struct{ engine, version, params, wantErr string }{
		{"mongodb", "7.0", "    authenticationMechanisms: PLAIN\n", "parameters may not set authenticationMechanisms on MongoDB"},
		{"mongodb", "7.0", "    ttl-monitor: \"1\"\n", "MongoDB's parameters are named as mongod names them"},
		{"mysql", "8.4", "    super_read_only: \"OFF\"\n", "parameters may not set super_read_only on MySQL: the controller sets it"},
		{"mysql", "8.4", "    port: \"3307\"\n", "parameters may not set port: the controller sets it"},
	} {
		out, err := e2eutil.KubectlRun(dbYAML("other", tt.engine, tt.version, 1, "  parameters:\n"+tt.params), "-n", ns, "create", "-f", "-")
		if err == nil || !strings.Contains(string(out), tt.wantErr) {
			t.Errorf("a %s Database with parameters %q: err %v, output %q; want refused with %q", tt.engine, tt.params, err, out, tt.wantErr)
		}
	}
}

// MongoDB's parameters are all given at start, as --setParameter
// name=value, unchecked (the controller has no MongoDB client): a new
// Database's from its first start, and a change rolls out to the pods,
// which the condition says once they run it.
func TestParametersMongoDB(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	createDB(t, ns, dbYAML("docs", "mongodb", "7.0", 1, "  parameters:\n    ttlMonitorSleepSecs: \"120\"\n"))
	applied := func(args ...string) {
		t.Helper()
		e2eutil.Eventually(t, converge, fmt.Sprintf("%q on mongod's command line, and the pod running it", args), func() (bool, string) {
			got := serverArgs(ns, "docs")
			db := e2eutil.GetDB(t, ns, "docs")
			c := meta.FindStatusCondition(db.Status.Conditions, dbv1alpha1.ConditionParametersApplied)
			return slices.Equal(got, args) && c != nil && c.Reason == "Applied" && c.ObservedGeneration == db.Generation,
				fmt.Sprintf("args %q, condition %+v", got, c)
		})
	}
	// After the TLS arguments (spec.tls.mode Enabled by default).
	tls := []string{"--tlsMode", "preferTLS", "--tlsCertificateKeyFile", "/etc/dbc-tls/mongodb.pem", "--tlsCAFile", "/etc/dbc-tls/ca.crt",
		"--tlsAllowConnectionsWithoutCertificates"}
	applied(append(tls, "--setParameter", "ttlMonitorSleepSecs=120")...)
	e2eutil.Kubectl(t, "-n", ns, "patch", "db/docs", "--type=merge", "-p", `{"spec":{"parameters":{"ttlMonitorSleepSecs":"90","logLevel":"1"}}}`)
	applied(append(tls, "--setParameter", "logLevel=1", "--setParameter", "ttlMonitorSleepSecs=90")...)
}

// Parameters from a ConfigMap labelled dbcontroller.io/parameters: a new
// Database's read at start reach its pods; the controller sees the
// ConfigMap change (a parameter it may not set is refused, naming the
// ConfigMap, with a Warning event) and go (not found), and says so.
func TestParametersConfigMap(t *testing.T) {
	t.Parallel()
	ns := e2eutil.NewNamespace(t)
	startController(t, controllerOptions{namespace: ns})
	e2eutil.KubectlIn(t, `apiVersion: v1
kind: ConfigMap
metadata:
  name: pg-tuning
  labels: {dbcontroller.io/parameters: "true"}
data:
  max_connections: "200"
  work_mem: 8MB
`, "-n", ns, "create", "-f", "-")
	createDB(t, ns, dbYAML("fromcm", "postgresql", "16", 1, "  parametersConfigMap: {name: pg-tuning}\n  parameters:\n    work_mem: 64MB\n"))
	e2eutil.Eventually(t, converge, "max_connections from the ConfigMap on the server's command line", func() (bool, string) {
		args := serverArgs(ns, "fromcm")
		return slices.Equal(args, append([]string{"postgres", "-c", "max_connections=200"}, postgresTLSArgs...)), fmt.Sprintf("args %q", args)
	})

	condition := func(reason, message string) {
		t.Helper()
		e2eutil.Eventually(t, converge, "ParametersApplied "+reason, func() (bool, string) {
			c := meta.FindStatusCondition(e2eutil.GetDB(t, ns, "fromcm").Status.Conditions, dbv1alpha1.ConditionParametersApplied)
			return c != nil && c.Reason == reason && strings.Contains(c.Message, message), fmt.Sprintf("%+v", c)
		})
	}
	e2eutil.Kubectl(t, "-n", ns, "patch", "configmap", "pg-tuning", "--type=merge", "-p", `{"data":{"port":"5433"}}`)
	condition("ParameterRejected", "ConfigMap pg-tuning sets port: the controller sets it")
	waitEvent(t, ns, "fromcm", "Warning ParameterRejected ConfigMap pg-tuning sets port", converge)
	e2eutil.Kubectl(t, "-n", ns, "delete", "configmap", "pg-tuning")
	condition("ParametersConfigMapNotFound", "ConfigMap pg-tuning, named by spec.parametersConfigMap, is not among the ConfigMaps labelled dbcontroller.io/parameters=true")
}

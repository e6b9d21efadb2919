//go:build e2e

package realnode

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dbcontroller/database-controller/pkg/objectstore"
	"github.com/dbcontroller/database-controller/test/e2e/e2eutil"
)

// The way the database pods will reach the object store, proven on the
// real node: an init container of the controller's image copies its
// binary into an emptyDir (controller install-tools), and the database
// image, unchanged, runs it as the server's user to put a file into the
// local cluster's store (versitygw, on the host's end of the node's veth
// pair) and read it back, with the credentials from a Secret, in the
// environment only; a key the store lacks exits 3. The host then reads
// the same object through package objectstore.
func TestToolsReachTheObjectStore(t *testing.T) {
	parallel(t)
	ns := e2eutil.NewNamespace(t)
	cfg := e2eutil.LocalObjectStore(t, localDir)
	cfg.Prefix = "realnode/" + t.Name()
	e2eutil.Kubectl(t, "-n", ns, "create", "secret", "generic", "store",
		"--from-literal=accessKeyID="+cfg.AccessKeyID, "--from-literal=secretAccessKey="+cfg.SecretAccessKey)
	script := `set -e
printf 'written from a pod\n' | /tools/controller objectstore put shop/orders/uid-1/dumps/a.sql
/tools/controller objectstore get shop/orders/uid-1/dumps/a.sql
set +e
/tools/controller objectstore get shop/orders/uid-1/dumps/b.sql 2>/dev/null
echo "missing: exit $?"
id -u`
	e2eutil.KubectlIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: tools
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  securityContext: {runAsUser: 999, runAsGroup: 999, fsGroup: 999}
  initContainers:
  - name: install-tools
    image: %s
    args: [install-tools, /tools]
    volumeMounts: [{name: tools, mountPath: /tools}]
  containers:
  - name: client
    image: %s
    command: ["sh", "-c", %q]
    env:
    - {name: %s, value: %q}
    - {name: %s, value: %q}
    - {name: %s, value: %q}
    - {name: %s, value: %q}
    - name: %s
      valueFrom: {secretKeyRef: {name: store, key: accessKeyID}}
    - name: %s
      valueFrom: {secretKeyRef: {name: store, key: secretAccessKey}}
    volumeMounts: [{name: tools, mountPath: /tools}]
  volumes:
  - name: tools
    emptyDir: {}
`, controllerImage, postgresImage, script,
		objectstore.EnvEndpoint, cfg.Endpoint, objectstore.EnvBucket, cfg.Bucket, objectstore.EnvRegion, cfg.Region,
		objectstore.EnvPrefix, cfg.Prefix, objectstore.EnvAccessKeyID, objectstore.EnvSecretAccessKey), "-n", ns, "create", "-f", "-")
	var pod corev1.Pod
	e2eutil.Eventually(t, converge, "the tools pod to finish", func() (bool, string) {
		pod = corev1.Pod{}
		e2eutil.GetJSON(t, &pod, "-n", ns, "get", "pod", "tools")
		return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed, "phase " + string(pod.Status.Phase)
	})
	logs := e2eutil.Kubectl(t, "-n", ns, "logs", "tools", "-c", "client")
	if pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("the tools pod %s%s:\n%s", pod.Status.Phase, whyFailed(&pod), logs)
	}
	if want := "written from a pod\nmissing: exit 3\n999\n"; logs != want {
		t.Errorf("the pod printed %q, want %q", logs, want)
	}

	store, err := objectstore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := store.Get(context.Background(), "shop/orders/uid-1/dumps/a.sql")
	if err != nil {
		t.Fatalf("the host reading what the pod put: %v", err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !strings.HasPrefix(string(got), "written from a pod") {
		t.Errorf("the host read %q (%v), want what the pod put", got, err)
	}
}

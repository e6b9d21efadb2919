//go:build e2e

package e2eutil

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/jsonpath"
)

// inProcess is the one client of the suite that serves the reads
// parseRead recognises (readargs.go), made at the first of them.
var inProcess struct {
	once      sync.Once
	err       error
	namespace string
	dynamic   dynamic.Interface
	core      kubernetes.Interface
	// config is the client's, for the streams of exec (exec.go).
	config   *rest.Config
	mapper   meta.RESTMapper
	deferred *restmapper.DeferredDiscoveryRESTMapper
	// reset is when the discovery was last read again; under lock.
	lock  sync.Mutex
	reset time.Time
}

// errExit is the error of a read served in process that kubectl would
// have ended with exit status 1; its output says why, as kubectl's would.
var errExit = errors.New("exit status 1 (read served in process, as kubectl would)")

func inProcessClient() error {
	inProcess.once.Do(func() {
		loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: suite.Kubeconfig}, &clientcmd.ConfigOverrides{})
		cfg, err := loader.ClientConfig()
		if err != nil {
			inProcess.err = err
			return
		}
		if inProcess.namespace, _, err = loader.Namespace(); err != nil {
			inProcess.err = err
			return
		}
		// The tests poll in parallel: no client-side limit, as each
		// kubectl process had none between its few requests.
		cfg.QPS = -1
		inProcess.config = cfg
		if inProcess.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
			inProcess.err = err
			return
		}
		if inProcess.core, err = kubernetes.NewForConfig(cfg); err != nil {
			inProcess.err = err
			return
		}
		disc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			inProcess.err = err
			return
		}
		cached := memory.NewMemCacheClient(disc)
		inProcess.deferred = restmapper.NewDeferredDiscoveryRESTMapper(cached)
		inProcess.mapper = restmapper.NewShortcutExpander(inProcess.deferred, cached, nil)
	})
	return inProcess.err
}

// readInProcess serves rc as kubectl would: the same requests, the same
// output, and an error where kubectl would exit with one. handled is
// false when it cannot (the client, or a resource its discovery does not
// know yet): kubectl runs instead.
func readInProcess(rc readCommand) (out []byte, handled bool, err error) {
	if inProcessClient() != nil {
		return nil, false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := rc.namespace
	if ns == "" {
		ns = inProcess.namespace
	}
	if rc.verb == "logs" {
		return logsInProcess(ctx, ns, rc)
	}
	gvk, err := inProcess.mapper.KindFor(schema.GroupVersionResource{Resource: rc.resource})
	if err != nil && rediscover() {
		// A resource served since discovery was read (a CRD the suite
		// installed after the first read).
		gvk, err = inProcess.mapper.KindFor(schema.GroupVersionResource{Resource: rc.resource})
	}
	if err != nil {
		return nil, false, nil
	}
	mapping, err := inProcess.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, false, nil
	}
	resource := inProcess.dynamic.Resource(mapping.Resource)
	var client dynamic.ResourceInterface = resource
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		client = resource.Namespace(ns)
	}
	var content map[string]any
	if rc.name != "" {
		obj, err := client.Get(ctx, rc.name, metav1.GetOptions{})
		if err != nil {
			return serverError(err)
		}
		content = obj.UnstructuredContent()
	} else {
		list, err := client.List(ctx, metav1.ListOptions{LabelSelector: rc.selector})
		if err != nil {
			return serverError(err)
		}
		// kubectl prints a list as a List of the items.
		items := make([]any, 0, len(list.Items))
		for i := range list.Items {
			items = append(items, list.Items[i].UnstructuredContent())
		}
		content = map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": items}
	}
	if rc.output == "json" {
		// kubectl leaves managed fields out of json (--show-managed-fields=false).
		stripManagedFields(content)
		b, err := json.MarshalIndent(content, "", "    ")
		if err != nil {
			return nil, false, nil
		}
		return append(b, '\n'), true, nil
	}
	jp := jsonpath.New("out")
	jp.AllowMissingKeys(true)
	if err := jp.Parse(rc.jsonPath); err != nil {
		return nil, false, nil
	}
	var b bytes.Buffer
	if err := jp.Execute(&b, content); err != nil {
		return []byte(fmt.Sprintf("error: error executing jsonpath %q: %v\n", rc.jsonPath, err)), true, errExit
	}
	return b.Bytes(), true, nil
}

// rediscover reads the API server's discovery again, at most every 5 s:
// a resource that is not served (yet) is kubectl's, which says so.
func rediscover() bool {
	inProcess.lock.Lock()
	defer inProcess.lock.Unlock()
	if time.Since(inProcess.reset) < 5*time.Second {
		return false
	}
	inProcess.reset = time.Now()
	inProcess.deferred.Reset()
	return true
}

// logsInProcess is kubectl logs of a pod with one container, or of the
// container named: a pod with several and none named is kubectl's to
// choose among.
func logsInProcess(ctx context.Context, ns string, rc readCommand) ([]byte, bool, error) {
	opts := &corev1.PodLogOptions{Container: rc.container}
	if rc.tail >= 0 {
		opts.TailLines = &rc.tail
	}
	if opts.Container == "" {
		pod, err := inProcess.core.CoreV1().Pods(ns).Get(ctx, rc.name, metav1.GetOptions{})
		if err != nil {
			return serverError(err)
		}
		if len(pod.Spec.Containers) != 1 {
			return nil, false, nil
		}
		opts.Container = pod.Spec.Containers[0].Name
	}
	b, err := inProcess.core.CoreV1().Pods(ns).GetLogs(rc.name, opts).DoRaw(ctx)
	if err != nil {
		return serverError(err)
	}
	return b, true, nil
}

// serverError is kubectl's output for an error of the API server, with
// errExit; an error that is not the server's is left to kubectl.
func serverError(err error) ([]byte, bool, error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return nil, false, nil
	}
	if reason := status.Status().Reason; reason != "" {
		return []byte(fmt.Sprintf("Error from server (%s): %s\n", reason, err.Error())), true, errExit
	}
	return []byte(fmt.Sprintf("Error from server: %s\n", err.Error())), true, errExit
}

func stripManagedFields(content map[string]any) {
	if items, ok := content["items"].([]any); ok {
		for _, item := range items {
			if m, ok := item.(map[string]any); ok {
				unstructured.RemoveNestedField(m, "metadata", "managedFields")
			}
		}
		return
	}
	unstructured.RemoveNestedField(content, "metadata", "managedFields")
}

// Command controller runs database-controller: it turns Database objects
// into a credentials Secret, Services and a StatefulSet, and keeps them
// converged.
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"

	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	corev1 "k8s.io/api/core/v1"

	"github.com/dbcontroller/database-controller/pkg/builder"
	clientset "github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned"
	dbinformers "github.com/dbcontroller/database-controller/pkg/generated/informers/externalversions"
	"github.com/dbcontroller/database-controller/pkg/signals"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

type options struct {
	masterURL    string
	kubeconfig   string
	namespace    string
	workers      int
	qps          float64
	burst        int
	resync       time.Duration
	drainTimeout time.Duration
	showVersion  bool
}

func (o *options) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Only required if out-of-cluster.")
	fs.StringVar(&o.masterURL, "master", "", "The address of the Kubernetes API server. Overrides any value in kubeconfig. Only required if out-of-cluster.")
	fs.StringVar(&o.namespace, "namespace", metav1.NamespaceAll, "Watch Databases in this namespace only. The default is all namespaces.")
	fs.IntVar(&o.workers, "workers", 4, "Number of Databases synced in parallel.")
	fs.Float64Var(&o.qps, "kube-api-qps", 50, "Steady queries per second allowed to the API server.")
	fs.IntVar(&o.burst, "kube-api-burst", 100, "Burst of queries allowed to the API server above --kube-api-qps.")
	fs.DurationVar(&o.resync, "resync-period", 10*time.Minute, "How often every Database is synced again even when nothing changed.")
	fs.DurationVar(&o.drainTimeout, "shutdown-timeout", 30*time.Second, "On SIGTERM, how long in-flight syncs may take to finish.")
	fs.BoolVar(&o.showVersion, "version", false, "Print the version and exit.")
}

func main() {
	klog.InitFlags(nil)
	var o options
	o.addFlags(flag.CommandLine)
	flag.Parse()
	if o.showVersion {
		fmt.Println(version)
		return
	}

	ctx := signals.SetupSignalHandler()
	logger := klog.FromContext(ctx)
	if err := run(ctx, o); err != nil {
		logger.Error(err, "Controller failed")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	klog.Flush()
}

func run(ctx context.Context, o options) error {
	logger := klog.FromContext(ctx)
	cfg, err := clientcmd.BuildConfigFromFlags(o.masterURL, o.kubeconfig)
	if err != nil {
		return fmt.Errorf("building kubeconfig: %w", err)
	}
	cfg.QPS = float32(o.qps)
	cfg.Burst = o.burst
	cfg.UserAgent = rest.DefaultKubernetesUserAgent() + " " + controllerAgentName + "/" + version

	kubeClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building kubernetes clientset: %w", err)
	}
	dbClient, err := clientset.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building database clientset: %w", err)
	}

	managed := labels.SelectorFromSet(labels.Set{builder.LabelManagedBy: builder.ManagedBy}).String()
	kubeInformerFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, o.resync,
		kubeinformers.WithNamespace(o.namespace),
		kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = managed }),
		kubeinformers.WithTransform(stripForCache))
	dbInformerFactory := dbinformers.NewSharedInformerFactoryWithOptions(dbClient, o.resync,
		dbinformers.WithNamespace(o.namespace),
		dbinformers.WithTransform(stripForCache))

	controller, err := NewController(ctx, kubeClient, dbClient,
		kubeInformerFactory.Apps().V1().StatefulSets(),
		kubeInformerFactory.Core().V1().Services(),
		kubeInformerFactory.Core().V1().Secrets(),
		dbInformerFactory.Dbcontroller().V1alpha1().Databases(),
		rand.Reader, clock.RealClock{})
	if err != nil {
		return err
	}

	kubeInformerFactory.Start(ctx.Done())
	dbInformerFactory.Start(ctx.Done())
	defer kubeInformerFactory.Shutdown()
	defer dbInformerFactory.Shutdown()

	logger.Info("Starting", "version", version, "namespace", o.namespace, "workers", o.workers)
	return controller.Run(ctx, o.workers, o.drainTimeout)
}

// stripForCache drops what the controller never reads before an object
// enters an informer cache: managed fields on every object, and the data of
// Secrets, so credentials never sit in the controller's memory.
func stripForCache(obj interface{}) (interface{}, error) {
	if accessor, ok := obj.(metav1.Object); ok {
		accessor.SetManagedFields(nil)
	}
	if secret, ok := obj.(*corev1.Secret); ok {
		secret.Data = nil
		secret.StringData = nil
	}
	return obj, nil
}

var _ cache.TransformFunc = stripForCache

// Command controller runs database-controller: it turns Database objects
// into a credentials Secret, Services and a StatefulSet, and keeps them
// converged.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	kubeinformers "k8s.io/client-go/informers"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	kubeinternal "k8s.io/client-go/informers/internalinterfaces"
	policyinformers "k8s.io/client-go/informers/policy/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/cached"
	clientset "github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned"
	dbinformers "github.com/dbcontroller/database-controller/pkg/generated/informers/externalversions"
	dbv1alpha1informers "github.com/dbcontroller/database-controller/pkg/generated/informers/externalversions/dbcontroller/v1alpha1"
	dbinternal "github.com/dbcontroller/database-controller/pkg/generated/informers/externalversions/internalinterfaces"
	"github.com/dbcontroller/database-controller/pkg/intern"
	"github.com/dbcontroller/database-controller/pkg/metrics"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/objectstore"
	"github.com/dbcontroller/database-controller/pkg/podnet"
	"github.com/dbcontroller/database-controller/pkg/podtools"
	"github.com/dbcontroller/database-controller/pkg/reconcile"
	"github.com/dbcontroller/database-controller/pkg/signals"
)

// version is stamped at build time by hack/build.sh.
var version = "dev"

// inClusterNamespaceFile holds the namespace of an in-cluster service account.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

type options struct {
	masterURL        string
	kubeconfig       string
	namespace        string
	workers          int
	qps              float64
	burst            int
	compression      bool
	resync           time.Duration
	credentialsCheck time.Duration
	tlsTrustPeriod   time.Duration
	drainTimeout     time.Duration
	showVersion      bool

	leaderElect        bool
	leaderElectNS      string
	leaderElectID      string
	leaseDuration      time.Duration
	renewDeadline      time.Duration
	retryPeriod        time.Duration
	metricsAddress     string
	healthProbeAddress string
	profiling          bool
	toolsImage         string
	watchNodes         bool
	serverAccess       string
}

func (o *options) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Only required if out-of-cluster.")
	fs.StringVar(&o.masterURL, "master", "", "The address of the Kubernetes API server. Overrides any value in kubeconfig. Only required if out-of-cluster.")
	fs.StringVar(&o.namespace, "namespace", metav1.NamespaceAll, "Watch Databases in this namespace only. The default is all namespaces.")
	// Eight: a pass sends one request at a time and waits for the answer
	// (tens of ms on a busy API server), so four workers could not use
	// --kube-api-qps's 50 creates a second while some of them wrote
	// statuses (docs/benchmarks.md, issue 30's sixth sitting).
	fs.IntVar(&o.workers, "workers", 8, "Number of Databases synced in parallel.")
	fs.Float64Var(&o.qps, "kube-api-qps", 50, "Steady queries per second allowed to the API server.")
	fs.IntVar(&o.burst, "kube-api-burst", 100, "Burst of queries allowed to the API server above --kube-api-qps.")
	fs.BoolVar(&o.compression, "kube-api-compression", false,
		"Ask the API server to gzip its responses, watches included. Off by default, as kube-controller-manager and kube-scheduler have it: next to the API server, compressing costs both ends more CPU than it saves; turn it on over a slow link to the cluster.")
	fs.DurationVar(&o.resync, "resync-period", 10*time.Minute, "How often every Database is synced again even when nothing changed.")
	fs.DurationVar(&o.tlsTrustPeriod, "tls-trust-period", reconcile.DefaultTrustPeriod,
		"How long a Database's new certificate authority is trusted beside the old one, in the Secrets clients read, before it signs the servers' certificates.")
	fs.DurationVar(&o.credentialsCheck, "credentials-check-interval", 30*time.Second,
		"How often the controller logs in to each Database's ready servers with its Secret's credentials, to report a password changed in the database alone (CredentialsRejected). It also logs in at once when the Secret or the ready servers change. 0 disables it.")
	fs.DurationVar(&o.drainTimeout, "shutdown-timeout", 30*time.Second, "On SIGTERM, how long in-flight syncs may take to finish.")
	fs.BoolVar(&o.showVersion, "version", false, "Print the version and exit.")

	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Run workers only while holding a Lease, so that several replicas can run for availability.")
	fs.StringVar(&o.leaderElectNS, "leader-elect-namespace", "", "Namespace of the Lease. The default is $POD_NAMESPACE, else the in-cluster service account's namespace, else default.")
	fs.StringVar(&o.leaderElectID, "leader-elect-id", "database-controller", "Name of the Lease.")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a standby waits after the last renewal before it takes the Lease.")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew before it gives up leadership.")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "How often candidates try to acquire or renew the Lease.")
	fs.StringVar(&o.metricsAddress, "metrics-bind-address", ":8080", "Address serving /metrics. \"0\" disables it.")
	fs.StringVar(&o.healthProbeAddress, "health-probe-bind-address", ":8081", "Address serving /healthz and /readyz. \"0\" disables it.")
	fs.BoolVar(&o.profiling, "profiling", false, "Also serve Go's profiles (/debug/pprof/) at --metrics-bind-address.")
	fs.BoolVar(&o.watchNodes, "watch-nodes", true,
		"Watch nodes, so that the primary of a replicated Database whose node is cordoned (for a drain) is switched over to a replica on another node before it is evicted. Needs get, list and watch on nodes, which the namespace-scoped install does not grant: it sets false.")
	fs.StringVar(&o.serverAccess, "server-access", string(podnet.AccessAuto),
		"How the controller reaches each server's port at its pod's address, for replication, TLS and the credentials check: direct, port-forward (through the API server, as kubectl port-forward does; needs create on pods/portforward), or auto: direct in a cluster; out of one, direct, and through the API server when the pod's address is not routed from where the controller runs.")
	fs.StringVar(&o.toolsImage, "tools-image", "",
		"The controller's own image. The pods that back up to and restore from an object store (spec.backup.objectStore) run its binary, copied in by an init container. The default is the image of the container named controller of the pod $POD_NAME in $POD_NAMESPACE (the Deployment sets both); without either, those backups and restores are refused, saying why.")
}

func main() {
	// The commands the controller's pods run, from the binary an init
	// container copies in (package podtools); the controller's flags
	// follow otherwise.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "objectstore":
			// A backup's files to or from the object store.
			os.Exit(objectstore.Command(signals.SetupSignalHandler(), os.Args[2:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
		case "install-tools":
			if len(os.Args) != 3 {
				fmt.Fprintln(os.Stderr, "usage: controller install-tools DIR")
				os.Exit(2)
			}
			if err := podtools.Install(os.Args[2]); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			return
		}
	}
	klog.InitFlags(nil)
	var o options
	o.addFlags(flag.CommandLine)
	flag.Parse()
	if o.showVersion {
		fmt.Println(version)
		return
	}

	gcPercent := setGCPercent(os.LookupEnv)

	ctx := signals.SetupSignalHandler()
	klog.FromContext(ctx).Info("Garbage collection", "GOGC", gcPercent)
	if err := run(ctx, o); err != nil {
		klog.FromContext(ctx).Error(err, "Controller failed")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	klog.Flush()
}

// defaultGCPercent is the garbage collector's target the controller runs
// with unless GOGC is in its environment: a collection when the heap has
// grown by half of what was live after the last one, not by all of it (Go's
// 100). Most of the heap is the informers' caches, which live as long as
// the process, so Go's default let the heap peak at about twice them. At
// 1,000 Databases (make bench, docs/benchmarks.md) 50 took the peak RSS
// from 126.0 to 107.3 MiB for 7% more CPU in convergence (17.8 → 19.1 s);
// 25 took it to 94.8 MiB for 39% more (24.8 s), and on a busy machine the
// Databases came up 10% later.
const defaultGCPercent = 50

// setGCPercent sets the garbage collector's target to defaultGCPercent
// unless the environment sets GOGC (lookupEnv is os.LookupEnv), which the
// Go runtime has then read at start and which rules. It returns the target
// in force, as GOGC is written.
func setGCPercent(lookupEnv func(string) (string, bool)) string {
	if v, set := lookupEnv("GOGC"); set {
		return v
	}
	debug.SetGCPercent(defaultGCPercent)
	return strconv.Itoa(defaultGCPercent)
}

func run(ctx context.Context, o options) error {
	// Whatever run returns for, a failure at start included, the informers
	// stop before it waits for them (the deferred Shutdowns): without this,
	// a controller that could not bind its health port waited for SIGTERM
	// with its error unsaid.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger := klog.FromContext(ctx)
	cfg, err := restConfig(o)
	if err != nil {
		return err
	}

	// Metrics must be registered before the clients and the queue exist.
	m := metrics.New()

	// Built-in kinds travel as protobuf, as kube-controller-manager's do:
	// cheaper to encode for the API server and to decode here than JSON,
	// for every object the informers watch. Databases have no protobuf
	// encoding: their client keeps JSON.
	kubeCfg := protobufConfig(cfg)
	kubeClient, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return fmt.Errorf("building kubernetes clientset: %w", err)
	}
	eventsClient, err := kubernetes.NewForConfig(rest.CopyConfig(kubeCfg))
	if err != nil {
		return fmt.Errorf("building events clientset: %w", err)
	}
	dbClient, err := clientset.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building database clientset: %w", err)
	}

	toolsImage := o.toolsImage
	if toolsImage == "" {
		toolsImage = ownImage(ctx, kubeClient)
	}
	logger.Info("Tools image of the pods that reach an object store", "image", toolsImage)

	kubeInformerFactory, dbInformerFactory := newInformerFactories(kubeClient, dbClient, o.namespace, o.resync)
	servers, err := serverDialer(ctx, o, cfg, kubeClient, kubeInformerFactory, m)
	if err != nil {
		return err
	}
	podnet.SetDefault(servers)
	claimEventInformerFactory := newClaimEventInformerFactory(eventsClient, o.namespace)
	configMapInformerFactory := newLabelledInformerFactory(kubeClient, o.namespace, dbv1alpha1.LabelParameters,
		&corev1.ConfigMap{}, coreinformers.NewFilteredConfigMapInformer)
	tlsSecretInformerFactory := newLabelledInformerFactory(kubeClient, o.namespace, dbv1alpha1.LabelTLS,
		&corev1.Secret{}, coreinformers.NewFilteredSecretInformer)
	var nodeInformerFactory kubeinformers.SharedInformerFactory
	if o.watchNodes {
		nodeInformerFactory = newNodeInformerFactory(kubeClient)
	}
	podMonitorFactory, podMonitorInformer, dynamicClient, err := newPodMonitorInformer(ctx, cfg, kubeClient, o.namespace, o.resync)
	if err != nil {
		return err
	}
	controller, err := NewController(ctx, Config{
		KubeClient:          kubeClient,
		EventsClient:        eventsClient,
		DBClient:            dbClient,
		KubeInformers:       kubeInformerFactory,
		DBInformers:         dbInformerFactory,
		ClaimEventInformers: claimEventInformerFactory,
		NodeInformers:       nodeInformerFactory,
		Metrics:             m,
		PrimaryChanges:      m,

		ParametersConfigMapInformers: configMapInformerFactory,
		TLSSecretInformers:           tlsSecretInformerFactory,
		PodMonitors:                  podMonitorInformer,
		Dynamic:                      dynamicClient,

		CredentialsCheckInterval: o.credentialsCheck,
		TLSTrustPeriod:           o.tlsTrustPeriod,
		ToolsImage:               toolsImage,
	})
	if err != nil {
		return err
	}
	m.RegisterDatabases(dbInformerFactory.Dbcontroller().V1alpha1().Databases().Lister())
	m.RegisterCached(controller.Cached())
	m.RegisterDatabaseState(dbInformerFactory.Dbcontroller().V1alpha1().Databases().Lister(),
		dbInformerFactory.Dbcontroller().V1alpha1().DatabaseBackups().Lister())

	// Informers start at once, also on standby replicas, so that a new
	// leader has warm caches.
	kubeInformerFactory.Start(ctx.Done())
	dbInformerFactory.Start(ctx.Done())
	claimEventInformerFactory.Start(ctx.Done())
	configMapInformerFactory.Start(ctx.Done())
	tlsSecretInformerFactory.Start(ctx.Done())
	defer kubeInformerFactory.Shutdown()
	defer dbInformerFactory.Shutdown()
	defer claimEventInformerFactory.Shutdown()
	defer configMapInformerFactory.Shutdown()
	defer tlsSecretInformerFactory.Shutdown()
	if nodeInformerFactory != nil {
		nodeInformerFactory.Start(ctx.Done())
		defer nodeInformerFactory.Shutdown()
	}
	if podMonitorFactory != nil {
		podMonitorFactory.Start(ctx.Done())
		defer podMonitorFactory.Shutdown()
	}
	defer cancel() // runs before the Shutdowns above

	var electionCheck *leaderelection.HealthzAdaptor
	if o.leaderElect {
		electionCheck = leaderelection.NewLeaderHealthzAdaptor(o.renewDeadline)
	}
	if err := serve(ctx, o, m, controller, electionCheck); err != nil {
		return err
	}

	logger.Info("Starting", "version", version, "namespace", o.namespace, "workers", o.workers, "leaderElection", o.leaderElect)
	if !o.leaderElect {
		return controller.Run(ctx, o.workers, o.drainTimeout)
	}
	return runWithLeaderElection(ctx, o, kubeClient, electionCheck, func(runCtx context.Context) error {
		return controller.Run(runCtx, o.workers, o.drainTimeout)
	})
}

// serverDialer is the podnet.Dialer of --server-access. Where it may go
// through the API server (not direct), its tunnels go to the API server at
// cfg, to the pods an index of the pods' informer finds by address; a
// direct one (the in-cluster default) adds no index and no tunnels. It
// logs the access chosen, and registers its metrics.
func serverDialer(ctx context.Context, o options, cfg *rest.Config, kubeClient kubernetes.Interface, informers kubeinformers.SharedInformerFactory,
	m *metrics.Metrics) (*podnet.Dialer, error) {
	access := podnet.Access(o.serverAccess)
	if !slices.Contains(podnet.Accesses, access) {
		return nil, fmt.Errorf("--server-access=%s: want one of %v", o.serverAccess, podnet.Accesses)
	}
	// In a cluster when no kubeconfig or address was given and the
	// service account's is there (clientcmd's own fallback).
	_, inClusterErr := rest.InClusterConfig()
	dc := podnet.Config{Access: access, InCluster: o.kubeconfig == "" && o.masterURL == "" && inClusterErr == nil, Observer: m}
	var tunnels *podnet.Tunnels
	if podnet.Effective(dc.Access, dc.InCluster) != podnet.AccessDirect {
		pods := informers.Core().V1().Pods().Informer()
		if err := pods.AddIndexers(cache.Indexers{podnet.IndexPodIP: podnet.IndexByPodIP}); err != nil {
			return nil, err
		}
		connect, err := podnet.ConnectThroughAPIServer(rest.CopyConfig(cfg), kubeClient.CoreV1().RESTClient())
		if err != nil {
			return nil, err
		}
		tunnels = podnet.NewTunnels(connect, nil)
		dc.Tunnels, dc.PodOf = tunnels, podnet.PodOfIndexer(pods.GetIndexer())
	}
	d := podnet.New(dc)
	m.RegisterServerAccess(access, d.Effective(), tunnels)
	klog.FromContext(ctx).Info("Servers reached", "access", access, "effective", d.Effective())
	return d, nil
}

// runWithLeaderElection calls work while this process holds the Lease. On
// shutdown (ctx done) it lets work finish first, then releases the Lease so
// that a standby takes over at once. Losing the Lease any other way ends the
// process: another replica may already be acting.
func runWithLeaderElection(ctx context.Context, o options, kubeClient kubernetes.Interface,
	check *leaderelection.HealthzAdaptor, work func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	id, err := os.Hostname()
	if err != nil {
		return err
	}
	id = id + "_" + string(randomSuffix())
	ns := leaderElectionNamespace(o.leaderElectNS)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: o.leaderElectID},
		Client:     kubeClient.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}

	// The election runs on its own context, cancelled only once work has
	// drained, so the Lease is held until the last write is done.
	electionCtx, cancelElection := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElection()
	var leading atomic.Bool
	workErr := make(chan error, 1)
	stopWaiting := context.AfterFunc(ctx, func() {
		if !leading.Load() {
			cancelElection()
		}
	})
	defer stopWaiting()

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.leaseDuration,
		RenewDeadline:   o.renewDeadline,
		RetryPeriod:     o.retryPeriod,
		ReleaseOnCancel: true,
		Name:            o.leaderElectID,
		WatchDog:        check,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaderCtx context.Context) {
				leading.Store(true)
				logger.Info("Became leader", "lease", klog.KRef(ns, o.leaderElectID), "identity", id)
				// Work stops on shutdown or on loss of leadership.
				runCtx, cancel := context.WithCancel(ctx)
				defer cancel()
				stop := context.AfterFunc(leaderCtx, cancel)
				defer stop()
				workErr <- work(runCtx)
				cancelElection()
			},
			OnStoppedLeading: func() {
				if ctx.Err() == nil && leading.Load() {
					logger.Error(nil, "Lost the leader election lease; exiting so that only one replica acts")
					klog.FlushAndExit(klog.ExitFlushTimeout, 1)
				}
				logger.Info("Released the leader election lease")
			},
			OnNewLeader: func(identity string) {
				if identity != id {
					logger.Info("Standing by", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	elector.Run(electionCtx)
	select {
	case err := <-workErr:
		return err
	default:
		return nil
	}
}

func randomSuffix() []byte {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return b
}

// ownImage is the image of the controller's own container, read from its
// pod ($POD_NAME in $POD_NAMESPACE, which the Deployment sets), so that
// --tools-image need not repeat it; "" outside a pod or when the pod
// cannot be read (said in the log).
func ownImage(ctx context.Context, client kubernetes.Interface) string {
	name, ns := os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE")
	if name == "" || ns == "" {
		return ""
	}
	pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		klog.FromContext(ctx).Info("Could not read the controller's own pod for its image; backups to an object store need --tools-image", "pod", klog.KRef(ns, name), "err", err)
		return ""
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == "controller" {
			return c.Image
		}
	}
	return ""
}

func leaderElectionNamespace(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(inClusterNamespaceFile); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b))
	}
	return metav1.NamespaceDefault
}

// serve starts the metrics and health servers.
func serve(ctx context.Context, o options, m *metrics.Metrics, c *Controller, election *leaderelection.HealthzAdaptor) error {
	if o.metricsAddress != "0" {
		if err := listenAndServe(ctx, o.metricsAddress, metricsHandler(m, o.profiling)); err != nil {
			return fmt.Errorf("metrics server: %w", err)
		}
	}
	if o.healthProbeAddress != "0" {
		if err := listenAndServe(ctx, o.healthProbeAddress, healthHandler(c, election)); err != nil {
			return fmt.Errorf("health server: %w", err)
		}
	}
	return nil
}

// metricsHandler serves /metrics and, with profiling, Go's profiles under
// /debug/pprof/ (heap, goroutine, CPU and the rest), as kube components do
// with their --profiling.
func metricsHandler(m *metrics.Metrics, profiling bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// healthHandler serves /healthz, which fails when this process leads but
// stopped renewing its Lease, and /readyz, which also waits for every
// informer cache to sync. election is nil without leader election.
func healthHandler(caches interface{ HasSynced() bool }, election *leaderelection.HealthzAdaptor) http.Handler {
	electionHealthy := func(r *http.Request) error {
		if election == nil {
			return nil
		}
		return election.Check(r)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		respond(w, electionHealthy(r))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		err := electionHealthy(r)
		if err == nil && !caches.HasSynced() {
			err = errors.New("informer caches have not synced")
		}
		respond(w, err)
	})
	return mux
}

func respond(w http.ResponseWriter, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok"))
}

// listenAndServe binds address now, so a port in use fails start-up, and
// serves until ctx is done.
func listenAndServe(ctx context.Context, address string, handler http.Handler) error {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	context.AfterFunc(ctx, func() {
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	})
	return nil
}

// protobufConfig is cfg asking for, and sending, protobuf: for clients of
// built-in kinds only.
// restConfig is the API server's address and credentials of the flags,
// with the clients' limits, compression and user agent.
func restConfig(o options) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags(o.masterURL, o.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("building kubeconfig: %w", err)
	}
	cfg.QPS = float32(o.qps)
	cfg.Burst = o.burst
	cfg.DisableCompression = !o.compression
	cfg.UserAgent = rest.DefaultKubernetesUserAgent() + " " + controllerAgentName + "/" + version
	return cfg, nil
}

func protobufConfig(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.ContentType = runtime.ContentTypeProtobuf
	out.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return out
}

// newInformerFactories returns the shared informer factories of the
// controller. The Kubernetes one lists and watches only objects labelled as
// managed by this controller, so that the caches do not hold every Secret,
// Service, StatefulSet and claim of the cluster; both strip what the
// controller never reads before an object is cached. Their informers keep
// no index by namespace (withoutNamespaceIndex) but the pods'.
func newInformerFactories(kubeClient kubernetes.Interface, dbClient clientset.Interface, namespace string, resync time.Duration) (
	kubeinformers.SharedInformerFactory, dbinformers.SharedInformerFactory) {
	managed := names.ManagedSelector()
	tweak := func(lo *metav1.ListOptions) { lo.LabelSelector = managed }
	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, resync,
		kubeinformers.WithNamespace(namespace),
		kubeinformers.WithTweakListOptions(tweak),
		kubeinformers.WithTransform(stripForCache))
	withoutNamespaceIndex(kubeFactory, namespace, tweak, map[runtime.Object]kubeInformer{
		&appsv1.StatefulSet{}:           appsinformers.NewFilteredStatefulSetInformer,
		&corev1.Service{}:               coreinformers.NewFilteredServiceInformer,
		&corev1.Secret{}:                coreinformers.NewFilteredSecretInformer,
		&corev1.PersistentVolumeClaim{}: coreinformers.NewFilteredPersistentVolumeClaimInformer,
		&batchv1.Job{}:                  batchinformers.NewFilteredJobInformer,
		&policyv1.PodDisruptionBudget{}: policyinformers.NewFilteredPodDisruptionBudgetInformer,
	})
	dbFactory := dbinformers.NewSharedInformerFactoryWithOptions(dbClient, resync,
		dbinformers.WithNamespace(namespace),
		dbinformers.WithTransform(stripForCache))
	// The same for the Databases and their backups, whose factory's client
	// is of another type.
	for obj, newInformer := range map[runtime.Object]func(clientset.Interface, string, time.Duration, cache.Indexers, dbinternal.TweakListOptionsFunc) cache.SharedIndexInformer{
		&dbv1alpha1.Database{}:       dbv1alpha1informers.NewFilteredDatabaseInformer,
		&dbv1alpha1.DatabaseBackup{}: dbv1alpha1informers.NewFilteredDatabaseBackupInformer,
	} {
		dbFactory.InformerFor(obj, func(c clientset.Interface, resync time.Duration) cache.SharedIndexInformer {
			return newInformer(c, namespace, resync, cache.Indexers{}, nil)
		})
	}
	return kubeFactory, dbFactory
}

// kubeInformer makes the informer of one kind, of a namespace (all when
// ""), with indexers, listing with the list options tweak sets: client-go's
// NewFiltered...Informer of that kind.
type kubeInformer func(client kubernetes.Interface, namespace string, resync time.Duration, indexers cache.Indexers,
	tweak kubeinternal.TweakListOptionsFunc) cache.SharedIndexInformer

// withoutNamespaceIndex has factory f make its informers of the kinds of
// kinds, of namespace and with the list options tweak sets, as it would
// (its resync, its transform), but with no index. A factory gives each
// informer an index by namespace: a set of every object's key per
// namespace, which only a lister's List of one namespace reads, and the
// controller reads these kinds by key and through indexes of its own
// (reconcile.NewCaches). The pods keep theirs: the backups' runner lists a
// Job's pods in its namespace.
func withoutNamespaceIndex(f kubeinformers.SharedInformerFactory, namespace string, tweak func(*metav1.ListOptions), kinds map[runtime.Object]kubeInformer) {
	for obj, newInformer := range kinds {
		f.InformerFor(obj, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			return newInformer(c, namespace, resync, cache.Indexers{}, tweak)
		})
	}
}

// newClaimEventInformerFactory returns the informer factory of the events
// about claims, the one kind of event the controller reads: why a claim
// waits for its volume is only there. Events carry no labels, so this
// factory is limited by a field selector instead; it watches through the
// events client, off the rate limiter of the creates, and has no resync, as
// no event needs one.
func newClaimEventInformerFactory(eventsClient kubernetes.Interface, namespace string) kubeinformers.SharedInformerFactory {
	claimEvents := fields.OneTermEqualSelector("involvedObject.kind", "PersistentVolumeClaim").String()
	tweak := func(lo *metav1.ListOptions) { lo.FieldSelector = claimEvents }
	f := kubeinformers.NewSharedInformerFactoryWithOptions(eventsClient, 0,
		kubeinformers.WithNamespace(namespace),
		kubeinformers.WithTweakListOptions(tweak),
		kubeinformers.WithTransform(stripForCache))
	withoutNamespaceIndex(f, namespace, tweak, map[runtime.Object]kubeInformer{&corev1.Event{}: coreinformers.NewFilteredEventInformer})
	return f
}

// newLabelledInformerFactory returns the informer factory of the objects
// that Databases name and the controller does not own: only those labelled
// label: "true" (the ConfigMaps of spec.parametersConfigMap,
// dbcontroller.io/parameters; the Secrets of spec.tls.secretName,
// dbcontroller.io/tls), so that the cluster's others cost no memory; with
// no resync, as none needs one. Secrets lose their data (stripForCache).
// Its one informer, of obj's kind, made by newInformer, keeps no index by
// namespace.
func newLabelledInformerFactory(kubeClient kubernetes.Interface, namespace, label string, obj runtime.Object, newInformer kubeInformer) kubeinformers.SharedInformerFactory {
	labelled := labels.SelectorFromSet(labels.Set{label: "true"}).String()
	tweak := func(lo *metav1.ListOptions) { lo.LabelSelector = labelled }
	f := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 0,
		kubeinformers.WithNamespace(namespace),
		kubeinformers.WithTweakListOptions(tweak),
		kubeinformers.WithTransform(stripForCache))
	withoutNamespaceIndex(f, namespace, tweak, map[runtime.Object]kubeInformer{obj: newInformer})
	return f
}

// newPodMonitorInformer returns the informer of the Prometheus Operator's
// PodMonitors labelled as managed by this controller, its factory, and a
// client that writes them, when the API server serves their API; nils
// when it does not, or does not say (said once in the log: monitored
// Databases get no PodMonitor until the controller restarts with it). The
// PodMonitors are unstructured: the controller does not import the
// operator's API.
func newPodMonitorInformer(ctx context.Context, cfg *rest.Config, kubeClient kubernetes.Interface, namespace string, resync time.Duration) (
	dynamicinformer.DynamicSharedInformerFactory, cache.SharedIndexInformer, dynamic.Interface, error) {
	logger := klog.FromContext(ctx)
	gv := builder.PodMonitorGVR.GroupVersion().String()
	resources, err := kubeClient.Discovery().ServerResourcesForGroupVersion(gv)
	served := err == nil && slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == builder.PodMonitorGVR.Resource })
	if !served {
		why := "not served"
		if err != nil && !apierrors.IsNotFound(err) {
			why = err.Error()
		}
		logger.Info("Monitored Databases get no PodMonitor: the Prometheus Operator's API is not there; restart the controller once it is, or apply artifacts/monitoring/podmonitors.yaml",
			"groupVersion", gv, "why", why)
		return nil, nil, nil, nil
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("building the PodMonitors' client: %w", err)
	}
	managed := names.ManagedSelector()
	// A role from before PodMonitors (an install not updated with the
	// binary) would leave the informer unsynced, and the controller waiting
	// for it: a list it is refused makes none instead, said once.
	if _, err := client.Resource(builder.PodMonitorGVR).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: managed, Limit: 1}); apierrors.IsForbidden(err) {
		logger.Info("Monitored Databases get no PodMonitor: the controller may not list them; grant it podmonitors (artifacts/deploy) and restart it",
			"groupVersion", gv, "err", err)
		return nil, nil, nil, nil
	}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, resync, namespace,
		func(lo *metav1.ListOptions) { lo.LabelSelector = managed })
	informer := factory.ForResource(builder.PodMonitorGVR).Informer()
	if err := informer.SetTransform(stripForCache); err != nil {
		return nil, nil, nil, err
	}
	logger.Info("Monitored Databases get a PodMonitor each: the Prometheus Operator's API is served", "groupVersion", gv)
	return factory, informer, client, nil
}

// newNodeInformerFactory returns the informer factory of the nodes, which
// carry no label of the controller's: it keeps of each only what says
// whether it is cordoned (stripNode), with no resync.
func newNodeInformerFactory(kubeClient kubernetes.Interface) kubeinformers.SharedInformerFactory {
	f := kubeinformers.NewSharedInformerFactoryWithOptions(kubeClient, 0, kubeinformers.WithTransform(stripForCache))
	// Nodes have no namespace: their informer is made with no index.
	withoutNamespaceIndex(f, metav1.NamespaceAll, nil, map[runtime.Object]kubeInformer{&corev1.Node{}: func(c kubernetes.Interface, _ string,
		resync time.Duration, indexers cache.Indexers, tweak kubeinternal.TweakListOptionsFunc) cache.SharedIndexInformer {
		return coreinformers.NewFilteredNodeInformer(c, resync, indexers, tweak)
	}})
	return f
}

// cacheStrings holds one copy of the strings that cached objects share
// (images, commands, label and annotation keys, their owner's kind), and of
// the maps of labels and selectors, the owner references, ports,
// containers and requests (a Database's labels and owner reference are on
// each of its Secrets, Services and its StatefulSet, and its labels on its
// claims, an engine's ports on each of its Databases' Services, what the
// cache keeps of its containers on each of their StatefulSets).
var cacheStrings = newCacheStrings()

// newCacheStrings is a table of 2^14 slots for strings (256 KiB and the
// strings in them) and 2^15 for the values objects share (768 KiB and the
// values; a map of labels of three keys is about 330 bytes). A Database's
// children do not come one after the other: a restart lists each kind for
// every Database, and Databases created by the thousand have their
// Services and StatefulSets while the claims of those before are bound.
// Its values (its labels, its owner, its pod's) must still be held when
// the last child comes: about four a Database, so 2^15 slots serve some
// 5,000 Databases (BenchmarkStripForCacheDatabase, 5,000 Databases'
// children kind by kind: 1,652 bytes more cached per Database with 2^13).
func newCacheStrings() *intern.Table { return intern.New(1<<14, 1<<15) }

// stripForCache drops what the controller never reads before an object
// enters an informer cache: managed fields on every object; the data of
// Secrets, so credentials never sit in the controller's memory; the spec of
// pods but their node, as the rest is the StatefulSet's template, read
// there, and of their status all but what the causes and the servers'
// addresses read; all of a claim but what names it, its volume, the size
// asked and whether it is bound (not the provisioner's annotations, nor
// the capacity); all of a node but whether it is cordoned; all of an event
// but what names its object, its kind and when and how often it happened;
// most of a StatefulSet's spec, its pod and claim templates
// (builder.StripTemplates: the drift comparison reads the API server's
// copy); of a Service's spec, what the API server fills in and the
// controller does not set; and the copy of a Database's manifest that
// `kubectl apply` keeps in an annotation. What is left
// shares the strings, and the maps and lists (labels, owners, ports,
// containers), that other cached objects hold (cacheStrings): each decoded
// object brings its own copies. Pods, Services, StatefulSets and Secrets
// are then held in their compact forms (package cached), which spend no
// memory on the fields left empty, and hold annotations in a slice.
func stripForCache(obj interface{}) (interface{}, error) {
	if accessor, ok := obj.(metav1.Object); ok {
		accessor.SetManagedFields(nil)
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		o.Data = nil
		o.StringData = nil
		cacheStrings.Strings(o)
		return cached.NewSecret(o), nil
	case *corev1.Pod:
		o.Spec = corev1.PodSpec{NodeName: o.Spec.NodeName}
		o.Status = corev1.PodStatus{Phase: o.Status.Phase, Conditions: readConditions(o.Status.Conditions), PodIP: o.Status.PodIP, PodIPs: o.Status.PodIPs,
			InitContainerStatuses: stripContainerStatuses(o.Status.InitContainerStatuses),
			ContainerStatuses:     stripContainerStatuses(o.Status.ContainerStatuses)}
		cacheStrings.Strings(o)
		return cached.NewPod(o), nil
	case *corev1.PersistentVolumeClaim:
		*o = corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: o.ResourceVersion,
				Labels: o.Labels, OwnerReferences: o.OwnerReferences, CreationTimestamp: o.CreationTimestamp, DeletionTimestamp: o.DeletionTimestamp},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: o.Spec.VolumeName,
				Resources: corev1.VolumeResourceRequirements{Requests: o.Spec.Resources.Requests}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: o.Status.Phase},
		}
		cacheStrings.Strings(o)
		return cached.NewPersistentVolumeClaim(o), nil
	case *corev1.Node:
		*o = corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion},
			Spec:       corev1.NodeSpec{Unschedulable: o.Spec.Unschedulable},
		}
	case *corev1.Event:
		*o = corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: o.ResourceVersion},
			InvolvedObject: o.InvolvedObject, Type: o.Type, Reason: o.Reason, Message: o.Message, Count: o.Count, Series: o.Series,
			FirstTimestamp: o.FirstTimestamp, LastTimestamp: o.LastTimestamp, EventTime: o.EventTime,
		}
	case *appsv1.StatefulSet:
		builder.StripTemplates(o)
		cacheStrings.Strings(o)
		return cached.NewStatefulSet(o), nil
	case *corev1.Service:
		// What the builder sets, which the drift check compares; not
		// what the API server fills in (the cluster IPs but the one,
		// families and policies) nor the status.
		o.Spec = corev1.ServiceSpec{Type: o.Spec.Type, ClusterIP: o.Spec.ClusterIP, Selector: o.Spec.Selector, Ports: o.Spec.Ports,
			PublishNotReadyAddresses: o.Spec.PublishNotReadyAddresses}
		o.Status = corev1.ServiceStatus{}
		cacheStrings.Strings(o)
		return cached.NewService(o), nil
	case *dbv1alpha1.Database:
		delete(o.Annotations, corev1.LastAppliedConfigAnnotation)
	}
	cacheStrings.Strings(obj)
	return obj, nil
}

var _ cache.TransformFunc = stripForCache

// readConditions are the conditions of a pod that a reader reads: whether
// it is ready (the causes, the servers' readiness), and whether it is
// scheduled (why it is not), with their status, reason, message and when
// they last changed (not when they were last probed, nor the generation
// observed). Of the kubelet's other three or four (initialized, containers
// ready, ready to start containers, disrupted), none is read. In a slice
// of their own: the decoded one holds them all.
func readConditions(in []corev1.PodCondition) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range in {
		if c.Type == corev1.PodReady || c.Type == corev1.PodScheduled {
			out = append(out, corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
				LastTransitionTime: c.LastTransitionTime})
		}
	}
	return out
}

// stripContainerStatuses keeps of each container's status what the causes
// and the servers' readiness read: its state and the one before, whether
// it started and is ready, its restarts and image. The kubelet's resources
// (two or three maps a container), mounts, user and IDs are dropped.
func stripContainerStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	for i, c := range in {
		in[i] = corev1.ContainerStatus{Name: c.Name, State: c.State, LastTerminationState: c.LastTerminationState,
			Ready: c.Ready, RestartCount: c.RestartCount, Image: c.Image, Started: c.Started}
	}
	return in
}

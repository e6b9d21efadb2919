package main

import (
	"context"
	"crypto/rand"
	"maps"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/certs"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/password"
	"github.com/dbcontroller/database-controller/pkg/plan"
	dbreconcile "github.com/dbcontroller/database-controller/pkg/reconcile"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// The product's names and labels (pkg/metrics), which the benchmark reads.
var (
	reconcileTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "database_controller_reconcile_total",
		Help: "Reconciles of a Database, by result: success or error.",
	}, []string{"result"})
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "database_controller_reconcile_duration_seconds",
		Help:    "Duration of a Database reconcile, by result.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"result"})
)

func init() {
	metrics.Registry.MustRegister(reconcileTotal, reconcileDuration)
}

// DatabaseReconciler reconciles a Database object.
type DatabaseReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// +kubebuilder:rbac:groups=dbcontroller.io,resources=databases,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=dbcontroller.io,resources=databases/status,verbs=get;update
// +kubebuilder:rbac:groups="",resources=secrets;services,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update

// SetupWithManager sets up the controller with the Manager.
func (r *DatabaseReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&dbv1alpha1.Database{}).
		Owns(&corev1.Secret{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.StatefulSet{}).
		Named("databases").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// Reconcile brings one Database's children and status to what its spec
// asks for.
func (r *DatabaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	start := time.Now()
	defer func() {
		result := "success"
		if err != nil {
			result = "error"
		}
		reconcileTotal.WithLabelValues(result).Inc()
		reconcileDuration.WithLabelValues(result).Observe(time.Since(start).Seconds())
	}()
	return ctrl.Result{}, r.reconcile(ctx, req)
}

func (r *DatabaseReconciler) reconcile(ctx context.Context, req ctrl.Request) error {
	db := &dbv1alpha1.Database{}
	if err := r.Get(ctx, req.NamespacedName, db); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !db.DeletionTimestamp.IsZero() {
		// Deletion is out of scope: let the garbage collector have it.
		if controllerutil.RemoveFinalizer(db, dbv1alpha1.FinalizerDatabase) {
			return r.Update(ctx, db)
		}
		return nil
	}
	if dbreconcile.FinalizerWanted(db) && controllerutil.AddFinalizer(db, dbv1alpha1.FinalizerDatabase) {
		if err := r.Update(ctx, db); err != nil {
			return err
		}
	}

	p := plan.Compute(db, plan.Observed{})
	if p.Problem != nil {
		return r.updateStatus(ctx, db, status.Input{Database: db, Endpoint: p.Endpoint, Problem: p.Problem, Now: metav1.Now()})
	}
	var bundle []byte
	var tlsStatus *dbv1alpha1.TLSStatus
	if db.Spec.TLSMode() != dbv1alpha1.TLSDisabled && p.Engine.Runtime().TLS != nil {
		ca, server, err := r.reconcileTLS(ctx, db, p.Engine)
		if err != nil {
			return err
		}
		bundle = ca.Data[builder.AuthorityKey]
		if tlsStatus, err = tlsStatusOf(db, ca, server); err != nil {
			return err
		}
	}

	credentials := &corev1.Secret{ObjectMeta: objectMeta(names.SecretName(db), db.Namespace)}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, credentials, func() error {
		if len(credentials.Data) == 0 {
			pw, err := password.Generate(rand.Reader)
			if err != nil {
				return err
			}
			desired := p.Secret(pw)
			if bundle != nil {
				desired.WithData(map[string][]byte{builder.AuthorityKey: bundle})
			}
			if err := fillSecret(credentials, desired); err != nil {
				return err
			}
		}
		return r.own(db, credentials, names.Labels(db), nil)
	}); err != nil {
		return err
	}

	for _, ac := range []*corev1ac.ServiceApplyConfiguration{p.HeadlessService, p.Service} {
		var desired corev1.Service
		if err := builder.Convert(ac, &desired); err != nil {
			return err
		}
		svc := &corev1.Service{ObjectMeta: objectMeta(desired.Name, desired.Namespace)}
		if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, svc, func() error {
			if svc.CreationTimestamp.IsZero() {
				svc.Spec = desired.Spec
			} else {
				// The fields this operator manages; the rest the API
				// server defaults (the kubebuilder samples' way).
				svc.Spec.Selector = desired.Spec.Selector
			}
			return r.own(db, svc, desired.Labels, desired.Annotations)
		}); err != nil {
			return err
		}
	}

	var desired appsv1.StatefulSet
	if err := builder.Convert(p.StatefulSet, &desired); err != nil {
		return err
	}
	sts := &appsv1.StatefulSet{ObjectMeta: objectMeta(desired.Name, desired.Namespace)}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, sts, func() error {
		if sts.CreationTimestamp.IsZero() {
			sts.Spec = desired.Spec
		} else {
			// The fields a user changes: the replicas and the images (the
			// kubebuilder samples' way); the whole template would differ
			// from the API server's defaults at every pass.
			sts.Spec.Replicas = desired.Spec.Replicas
			setImages(sts.Spec.Template.Spec.InitContainers, desired.Spec.Template.Spec.InitContainers)
			setImages(sts.Spec.Template.Spec.Containers, desired.Spec.Template.Spec.Containers)
		}
		return r.own(db, sts, desired.Labels, desired.Annotations)
	}); err != nil {
		return err
	}

	return r.updateStatus(ctx, db, status.Input{
		Database:    db,
		Endpoint:    p.Endpoint,
		StatefulSet: sts,
		Image:       p.Image,
		Now:         metav1.Now(),
		TLSDecided:  true,
		TLS:         tlsStatus,
	})
}

// updateStatus writes the status computed from in when it differs from
// the stored one.
func (r *DatabaseReconciler) updateStatus(ctx context.Context, db *dbv1alpha1.Database, in status.Input) error {
	st := status.Compute(in)
	if equality.Semantic.DeepEqual(db.Status, st) {
		return nil
	}
	db.Status = st
	return r.Status().Update(ctx, db)
}

// reconcileTLS makes the Secrets of the Database's authority and of its
// servers' certificate, issued as the controller issues them, when they do
// not exist; an existing certificate is kept as it is.
func (r *DatabaseReconciler) reconcileTLS(ctx context.Context, db *dbv1alpha1.Database, e engine.Engine) (ca, server *corev1.Secret, err error) {
	now := time.Now()
	ca = &corev1.Secret{ObjectMeta: objectMeta(names.AuthoritySecretName(db), db.Namespace)}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, ca, func() error {
		if len(ca.Data) == 0 {
			desired, err := authoritySecret(db, now)
			if err != nil {
				return err
			}
			if err := fillSecret(ca, desired); err != nil {
				return err
			}
		}
		return r.own(db, ca, names.Labels(db), nil)
	}); err != nil {
		return nil, nil, err
	}
	server = &corev1.Secret{ObjectMeta: objectMeta(names.TLSSecretName(db), db.Namespace)}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, server, func() error {
		if len(server.Data) == 0 {
			authority := certs.Issued{CertPEM: ca.Data[builder.AuthorityKey], KeyPEM: ca.Data[builder.AuthorityKeyKey]}
			desired, err := serverSecret(db, e, authority, now)
			if err != nil {
				return err
			}
			if err := fillSecret(server, desired); err != nil {
				return err
			}
		}
		return r.own(db, server, names.Labels(db), nil)
	}); err != nil {
		return nil, nil, err
	}
	return ca, server, nil
}

// authoritySecret is the Secret of a new authority of db, as
// hack/bench/floor.go's floorTLSSecrets makes it.
func authoritySecret(db *dbv1alpha1.Database, now time.Time) (*corev1ac.SecretApplyConfiguration, error) {
	ca, err := certs.NewAuthority(rand.Reader, db.Namespace+"/"+db.Name+" database-controller authority", now, certs.AuthorityValidity)
	if err != nil {
		return nil, err
	}
	authority, err := builder.AuthorityOf(ca)
	if err != nil {
		return nil, err
	}
	return builder.NewAuthoritySecret(db, authority), nil
}

// serverSecret is the Secret of a new server certificate of db signed by
// ca, as hack/bench/floor.go's floorTLSSecrets makes it.
func serverSecret(db *dbv1alpha1.Database, e engine.Engine, ca certs.Issued, now time.Time) (*corev1ac.SecretApplyConfiguration, error) {
	server, err := certs.IssueServer(rand.Reader, ca, certs.ServerNames(names.ServiceName(db), names.ReadOnlyServiceName(db),
		names.HeadlessServiceName(db), db.Namespace, names.ClusterDomain), now, certs.ServerValidity)
	if err != nil {
		return nil, err
	}
	caCert, err := certs.Parse(ca.CertPEM)
	if err != nil {
		return nil, err
	}
	cert, err := certs.Parse(server.CertPEM)
	if err != nil {
		return nil, err
	}
	caSerial := caCert.SerialNumber.Text(16)
	return builder.NewTLSSecret(db, e, builder.ServerCertificate{CertPEM: server.CertPEM, KeyPEM: server.KeyPEM,
		BundlePEM: certs.Bundle(now, ca.CertPEM), Mode: string(db.Spec.TLSMode()), Names: caSerial, Serial: cert.SerialNumber.Text(16),
		Issuer: caSerial, Bundle: caSerial, Trusts: caSerial, TrustedSince: now, NotAfter: cert.NotAfter, RenewAt: certs.RenewAt(cert),
		AuthorityNotAfter: caCert.NotAfter}), nil
}

// tlsStatusOf is status.tls from the certificates in the Secrets.
func tlsStatusOf(db *dbv1alpha1.Database, ca, server *corev1.Secret) (*dbv1alpha1.TLSStatus, error) {
	caCert, err := certs.Parse(ca.Data[builder.AuthorityKey])
	if err != nil {
		return nil, err
	}
	cert, err := certs.Parse(server.Data[builder.TLSCertKey])
	if err != nil {
		return nil, err
	}
	at := func(t time.Time) *metav1.Time { return &metav1.Time{Time: t.UTC().Truncate(time.Second)} }
	return &dbv1alpha1.TLSStatus{Mode: db.Spec.TLSMode(), Secret: server.Name, NotAfter: at(cert.NotAfter),
		RenewAt: at(certs.RenewAt(cert)), AuthorityNotAfter: at(caCert.NotAfter)}, nil
}

// fillSecret gives an empty Secret what the builder made: its type, data
// and annotations.
func fillSecret(s *corev1.Secret, ac *corev1ac.SecretApplyConfiguration) error {
	var desired corev1.Secret
	if err := builder.Convert(ac, &desired); err != nil {
		return err
	}
	s.Type, s.Data = desired.Type, desired.Data
	s.Annotations = withEntries(s.Annotations, desired.Annotations)
	return nil
}

// own sets labels and annotations on a child and makes db its controller.
func (r *DatabaseReconciler) own(db *dbv1alpha1.Database, obj client.Object, labels, annotations map[string]string) error {
	obj.SetLabels(withEntries(obj.GetLabels(), labels))
	obj.SetAnnotations(withEntries(obj.GetAnnotations(), annotations))
	return controllerutil.SetControllerReference(db, obj, r.Scheme)
}

// withEntries is m with the entries of add set.
func withEntries(m, add map[string]string) map[string]string {
	if len(add) == 0 {
		return m
	}
	if m == nil {
		m = map[string]string{}
	}
	maps.Copy(m, add)
	return m
}

// setImages sets the image of each container of have that want names.
func setImages(have, want []corev1.Container) {
	for i := range have {
		for _, w := range want {
			if w.Name == have[i].Name {
				have[i].Image = w.Image
			}
		}
	}
}

func objectMeta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace}
}

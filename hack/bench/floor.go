package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/certs"
	"github.com/dbcontroller/database-controller/pkg/engine"
	dbapply "github.com/dbcontroller/database-controller/pkg/generated/applyconfiguration/dbcontroller/v1alpha1"
	clientset "github.com/dbcontroller/database-controller/pkg/generated/clientset/versioned"
	"github.com/dbcontroller/database-controller/pkg/metrics"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/password"
	"github.com/dbcontroller/database-controller/pkg/plan"
	"github.com/dbcontroller/database-controller/pkg/reconcile"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// floorFieldManager names the floor's writes, apart from the controller's.
const floorFieldManager = "database-controller-floor"

// The floor is the least API work that brings a Database to the state the
// controller brings it to, with no controller around it: for each Database,
// the controller's finalizer when it wants one (reconcile.FinalizerWanted:
// under the default deletionPolicy Retain), the same creates the
// controller makes (with TLS, on by default, the authority's and the
// server certificate's Secrets, issued as the controller issues them;
// the credentials Secret, with the authority in ca.crt; the headless and
// the client Service; the StatefulSet), built by the same builders, and
// once its StatefulSet reports every replica ready, one server-side apply
// of the same Running status the controller would compute (status.Compute,
// with status.tls). It has no informers, no events, no intermediate status
// writes and no reads before writing: it knows every Database from the
// create that made it, and learns readiness from one WATCH of StatefulSets.
// Its workers, QPS and burst are the controller's, over two clientsets as
// the controller has (one for Kubernetes objects, one for Databases, each
// with its own client-side rate limiter).
type floor struct {
	kube    kubernetes.Interface
	dbs     clientset.Interface
	ns      string
	workers int
	// counter counts every request the floor's clients make.
	counter *requestCounter
	// giveUp ends the run when a write keeps failing.
	giveUp context.CancelCauseFunc
}

type floorTask struct {
	db  *dbv1alpha1.Database
	sts *appsv1.StatefulSet // set for a status write
}

// floorResult is what the floor did and when.
type floorResult struct {
	childrenDone time.Time // the last StatefulSet create returned
	statusDone   time.Time // the last status write returned
	statusWrites int
	failures     int // failed writes, each retried
	complete     bool
}

// run makes the children of every Database received on in (n of them), and
// writes each one's Running status once its StatefulSet is ready. It
// returns when all n statuses are written or ctx is done.
func (f *floor) run(ctx context.Context, in <-chan *dbv1alpha1.Database, n int) (floorResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	f.giveUp = cancel
	var (
		mu      sync.Mutex
		known   = map[string]*dbv1alpha1.Database{}
		queued  = map[string]bool{}
		res     floorResult
		created int
		written int
	)
	allWritten := make(chan struct{})
	statusCh := make(chan floorTask, n)

	// Readiness: one WATCH of the StatefulSets, through the floor's own
	// (rate limited, counted) client.
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	synced := make(chan struct{})
	go statefulSetsLW(f.kube, f.ns).run(wctx, func(_ watch.EventType, obj runtime.Object) {
		sts, ok := obj.(*appsv1.StatefulSet)
		if !ok {
			return
		}
		mu.Lock()
		db := known[sts.Name]
		if db == nil || queued[sts.Name] {
			mu.Unlock()
			return
		}
		st, err := floorStatus(db, sts)
		if err != nil || st.Phase != dbv1alpha1.PhaseRunning {
			mu.Unlock()
			return
		}
		queued[sts.Name] = true
		mu.Unlock()
		statusCh <- floorTask{db: db, sts: sts}
	}, synced)
	select {
	case <-synced:
	case <-ctx.Done():
		return res, ctx.Err()
	}

	var wg sync.WaitGroup
	for range f.workers {
		wg.Go(func() {
			for {
				var t floorTask
				select {
				case <-ctx.Done():
					return
				case <-allWritten:
					return
				case t = <-statusCh:
				case db, ok := <-in:
					if !ok {
						in = nil // all received; keep serving status writes
						continue
					}
					t = floorTask{db: db}
				}
				if t.sts == nil {
					mu.Lock()
					known[t.db.Name] = t.db
					mu.Unlock()
					fails := f.createChildren(ctx, t.db)
					mu.Lock()
					res.failures += fails
					created++
					if created == n {
						res.childrenDone = time.Now()
					}
					mu.Unlock()
					continue
				}
				fails := f.writeStatus(ctx, t.db, t.sts)
				mu.Lock()
				res.failures += fails
				written++
				res.statusWrites++
				if written == n {
					res.statusDone = time.Now()
					res.complete = true
					close(allWritten)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if res.complete {
		return res, nil
	}
	return res, context.Cause(ctx)
}

// createChildren makes the four children in the controller's order, as
// the controller's plan (pkg/plan) has them. A failed write is retried until
// it succeeds or ctx ends; it returns the number of failures.
func (f *floor) createChildren(ctx context.Context, db *dbv1alpha1.Database) int {
	p := plan.Compute(db, plan.Observed{})
	if p.Problem != nil {
		logf("floor: %s: %v", db.Name, p.Problem)
		return 1
	}
	opts := metav1.CreateOptions{FieldManager: floorFieldManager}
	core := f.kube.CoreV1()
	fails := 0
	if reconcile.FinalizerWanted(db) && !slices.Contains(db.Finalizers, dbv1alpha1.FinalizerDatabase) {
		fails += f.retry(ctx, "finalizer of "+db.Name, func() error {
			patch, err := backup.FinalizersPatch(db.ResourceVersion, db.Finalizers, append(slices.Clone(db.Finalizers), dbv1alpha1.FinalizerDatabase))
			if err != nil {
				return err
			}
			_, err = f.dbs.DbcontrollerV1alpha1().Databases(db.Namespace).Patch(ctx, db.Name, types.JSONPatchType, patch,
				metav1.PatchOptions{FieldManager: floorFieldManager})
			return err
		})
	}
	var bundle []byte
	if db.Spec.TLSMode() != dbv1alpha1.TLSDisabled && p.Engine.Runtime().TLS != nil {
		tlsSecrets, err := floorTLSSecrets(db, p.Engine, time.Now())
		if err != nil {
			logf("floor: %s: %v", db.Name, err)
			return fails + 1
		}
		for _, ac := range tlsSecrets {
			fails += f.retry(ctx, "Secret "+*ac.Name, func() error {
				var secret corev1.Secret
				if err := builder.Convert(ac, &secret); err != nil {
					return err
				}
				_, err := core.Secrets(f.ns).Create(ctx, &secret, opts)
				return ignoreExists(err)
			})
		}
		bundle = tlsSecrets[0].Data[builder.AuthorityKey]
	}
	fails += f.retry(ctx, "Secret "+db.Name, func() error {
		pw, err := password.Generate(rand.Reader)
		if err != nil {
			return err
		}
		var secret corev1.Secret
		desired := p.Secret(pw)
		if bundle != nil {
			desired.WithData(map[string][]byte{builder.AuthorityKey: bundle})
		}
		if err := builder.Convert(desired, &secret); err != nil {
			return err
		}
		_, err = core.Secrets(f.ns).Create(ctx, &secret, opts)
		return ignoreExists(err)
	})
	for _, svc := range []*corev1ac.ServiceApplyConfiguration{p.HeadlessService, p.Service} {
		fails += f.retry(ctx, "Service "+*svc.Name, func() error {
			var obj corev1.Service
			if err := builder.Convert(svc, &obj); err != nil {
				return err
			}
			_, err := core.Services(f.ns).Create(ctx, &obj, opts)
			return ignoreExists(err)
		})
	}
	fails += f.retry(ctx, "StatefulSet "+db.Name, func() error {
		var obj appsv1.StatefulSet
		if err := builder.Convert(p.StatefulSet, &obj); err != nil {
			return err
		}
		_, err := f.kube.AppsV1().StatefulSets(f.ns).Create(ctx, &obj, opts)
		return ignoreExists(err)
	})
	return fails
}

// floorTLSSecrets are the authority's and the server certificate's
// Secrets of db, issued at now as the controller issues them (the
// annotations it decides from are filled with the certificates' own
// facts; their digests are the controller's business).
func floorTLSSecrets(db *dbv1alpha1.Database, e engine.Engine, now time.Time) ([]*corev1ac.SecretApplyConfiguration, error) {
	ca, err := certs.NewAuthority(rand.Reader, db.Namespace+"/"+db.Name+" database-controller authority", now, certs.AuthorityValidity)
	if err != nil {
		return nil, err
	}
	server, err := certs.IssueServer(rand.Reader, ca, certs.ServerNames(names.ServiceName(db), names.ReadOnlyServiceName(db),
		names.HeadlessServiceName(db), db.Namespace, names.ClusterDomain), now, certs.ServerValidity)
	if err != nil {
		return nil, err
	}
	authority, err := builder.AuthorityOf(ca)
	if err != nil {
		return nil, err
	}
	cert, err := certs.Parse(server.CertPEM)
	if err != nil {
		return nil, err
	}
	bundle := certs.Bundle(now, ca.CertPEM)
	caSerial := authority.Serial
	return []*corev1ac.SecretApplyConfiguration{
		builder.NewAuthoritySecret(db, authority),
		builder.NewTLSSecret(db, e, builder.ServerCertificate{CertPEM: server.CertPEM, KeyPEM: server.KeyPEM, BundlePEM: bundle,
			Mode: string(db.Spec.TLSMode()), Names: caSerial, Serial: cert.SerialNumber.Text(16), Issuer: caSerial, Bundle: caSerial,
			Trusts: caSerial, TrustedSince: now, NotAfter: cert.NotAfter, RenewAt: certs.RenewAt(cert), AuthorityNotAfter: authority.NotAfter}),
	}, nil
}

// floorStatus is the status the controller computes for db with sts
// observed, status.tls with the dates of certificates issued when the
// StatefulSet was made.
func floorStatus(db *dbv1alpha1.Database, sts *appsv1.StatefulSet) (dbv1alpha1.DatabaseStatus, error) {
	p := plan.Compute(db, plan.Observed{StatefulSet: sts})
	if p.Problem != nil {
		return dbv1alpha1.DatabaseStatus{}, p.Problem
	}
	var tlsStatus *dbv1alpha1.TLSStatus
	if db.Spec.TLSMode() != dbv1alpha1.TLSDisabled && p.Engine.Runtime().TLS != nil {
		issued := sts.CreationTimestamp.Time
		at := func(d time.Duration) *metav1.Time {
			return &metav1.Time{Time: issued.Add(d).UTC().Truncate(time.Second)}
		}
		tlsStatus = &dbv1alpha1.TLSStatus{Mode: db.Spec.TLSMode(), Secret: names.TLSSecretName(db), NotAfter: at(certs.ServerValidity),
			RenewAt: at(certs.ServerValidity * 2 / 3), AuthorityNotAfter: at(certs.AuthorityValidity)}
	}
	return status.Compute(status.Input{
		Database:    db,
		Endpoint:    p.Endpoint,
		StatefulSet: sts,
		Image:       p.Image,
		Now:         metav1.Now(),
		TLSDecided:  true,
		TLS:         tlsStatus,
	}), nil
}

// writeStatus applies the Running status, as the controller does: a
// server-side apply of the whole status.
func (f *floor) writeStatus(ctx context.Context, db *dbv1alpha1.Database, sts *appsv1.StatefulSet) int {
	return f.retry(ctx, "status of "+db.Name, func() error {
		newStatus, err := floorStatus(db, sts)
		if err != nil {
			return err
		}
		st := &dbapply.DatabaseStatusApplyConfiguration{}
		if err := builder.Convert(newStatus, st); err != nil {
			return err
		}
		ac := dbapply.Database(db.Name, db.Namespace).WithStatus(st)
		_, err = f.dbs.DbcontrollerV1alpha1().Databases(db.Namespace).ApplyStatus(ctx, ac,
			metav1.ApplyOptions{FieldManager: floorFieldManager, Force: true})
		return err
	})
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// retry runs write until it succeeds or ctx ends, and returns how many times
// it failed. A write that fails 25 times in a row (5 s) ends the run.
func (f *floor) retry(ctx context.Context, what string, write func() error) int {
	fails := 0
	for {
		err := write()
		if err == nil || ctx.Err() != nil {
			return fails
		}
		fails++
		if fails >= 25 {
			f.giveUp(fmt.Errorf("writing %s failed %d times; last error: %w", what, fails, err))
			return fails
		}
		if fails <= 2 {
			logf("floor: writing %s: %v (retrying)", what, err)
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

// requestCounter counts the requests that pass through a client, by HTTP
// method and resource, as the controller's rest_client metrics do.
type requestCounter struct {
	mu     sync.Mutex
	counts map[[2]string]int
	codes  map[[2]string]int // method, status code
}

func newRequestCounter() *requestCounter {
	return &requestCounter{counts: map[[2]string]int{}, codes: map[[2]string]int{}}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		code := "<error>"
		if err == nil {
			code = fmt.Sprint(resp.StatusCode)
		}
		c.mu.Lock()
		c.counts[[2]string{r.Method, metrics.ResourceOf(r.URL.Path)}]++
		c.codes[[2]string{r.Method, code}]++
		c.mu.Unlock()
		return resp, err
	})
}

type countRow struct {
	verb, resource string
	n              float64
}

func (c *requestCounter) rows() []countRow {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []countRow
	for k, n := range c.counts {
		out = append(out, countRow{k[0], k[1], float64(n)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].verb != out[j].verb {
			return out[i].verb < out[j].verb
		}
		return out[i].resource < out[j].resource
	})
	return out
}

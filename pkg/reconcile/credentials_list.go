package reconcile

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/pager"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// listedTTL bounds how long a credentials Secret read by ListCredentials
// waits for the pass that takes it.
const listedTTL = 10 * time.Minute

// ListCredentials reads the credentials Secrets of the Databases dbs (all
// in namespace) with one paged LIST, and keeps them for the passes that
// would each read their own: the informers' cache holds no Secret's data,
// and the first pass over a Database with a ready server needs its
// credentials. A controller started over N such Databases would otherwise
// make N GETs through the client's rate limit, one per first pass, and a
// Database created meanwhile would wait for all of them. Only the Secrets
// of Databases whose servers the controller logs in to are kept (not
// MongoDB's, which no pass reads), and no LIST is made when there are
// none. A pass takes its Secret from what was listed when the cache shows
// the same version of it, and reads it itself otherwise. It returns how
// many Secrets it kept; the controller calls it once per namespace, before
// its workers start.
func (r *Reconciler) ListCredentials(ctx context.Context, namespace string, dbs []*dbv1alpha1.Database) (int, error) {
	reads := map[string]types.UID{}
	for _, db := range dbs {
		if db.Namespace == namespace && r.logsIn(db.Spec.Engine) {
			reads[db.Name] = db.UID
		}
	}
	if len(reads) == 0 {
		return 0, nil
	}
	kept := 0
	list := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		return r.kube.CoreV1().Secrets(namespace).List(ctx, opts)
	}))
	err := list.EachListItemWithAlloc(ctx, metav1.ListOptions{LabelSelector: names.ManagedSelector()}, func(obj runtime.Object) error {
		s, ok := obj.(*corev1.Secret)
		if !ok {
			return nil
		}
		if owner := credentialsOwner(s); owner == nil || reads[owner.Name] != owner.UID {
			return nil
		}
		r.listed.Put(s.UID, s)
		kept++
		return nil
	})
	if err != nil {
		return kept, fmt.Errorf("listing the credentials Secrets of namespace %s: %w", namespace, err)
	}
	return kept, nil
}

// credentialsOwner is the Database that controls s when s is its
// credentials Secret (names.SecretName), not one of its other Secrets;
// nil otherwise.
func credentialsOwner(s *corev1.Secret) *metav1.OwnerReference {
	owner := metav1.GetControllerOf(s)
	if owner == nil || owner.Kind != "Database" || owner.APIVersion != dbv1alpha1.SchemeGroupVersion.String() ||
		s.Name != names.SecretName(&dbv1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: owner.Name}}) {
		return nil
	}
	return owner
}

// logsIn reports whether the controller logs in to the servers of engine
// (replication, the credentials check, and what they bring: monitoring,
// parameters, archiving, the certificate presented), and so reads its
// Databases' credentials.
func (r *Reconciler) logsIn(engine dbv1alpha1.Engine) bool {
	if _, ok := r.replication[engine]; ok {
		return true
	}
	return r.logins != nil && r.logins.Checks(string(engine))
}

// takeListed returns the Secret ListCredentials read of cached, when it is
// the version the cache holds; either way it is not kept any longer.
func (r *Reconciler) takeListed(cached *corev1.Secret) (*corev1.Secret, bool) {
	listed, ok := r.listed.Get(cached.UID)
	if !ok {
		return nil, false
	}
	r.listed.Remove(cached.UID)
	return listed, listed.ResourceVersion == cached.ResourceVersion
}

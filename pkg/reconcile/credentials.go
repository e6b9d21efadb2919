package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"

	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/password"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// ensureSecret creates the credentials Secret once, and returns what it
// created. It never rewrites an existing Secret, so users may rotate the
// password, and it never makes a new password for a database that was
// initialised (its StatefulSet exists): that data has the old one.
func (p *pass) ensureSecret(ctx context.Context, initialised bool, tls tlsFindings) ([]string, error) {
	r, db := p.r, p.db
	name := names.SecretName(db)
	key := ChildKey{Kind: "Secret", Namespace: db.Namespace, Name: name}
	r.expectations.Look(key)
	existing, err := p.read.secret(db.Namespace, name)
	if err == nil {
		r.expectations.Observed(key)
		switch {
		case metav1.IsControlledBy(existing, db):
			return nil, nil
		case metav1.GetControllerOf(existing) == nil:
			// Released by an earlier Database of this name, or restored by a
			// person: the cache holds no data, so read it to adopt it.
			live, err := r.kube.CoreV1().Secrets(db.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("reading Secret %s to adopt it: %w", name, err)
			}
			return nil, p.adoptSecret(ctx, live)
		}
		return nil, conflict(db, "Secret", name)
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	if r.expectations.Pending(key) {
		return nil, &WaitingError{Kind: "Secret", Name: name}
	}
	secrets := r.kube.CoreV1().Secrets(db.Namespace)
	// look reads the Secret that the filtered cache cannot see: someone
	// else's, or ours with its labels removed, or gone.
	look := func() (found bool, err error) {
		live, err := secrets.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case err != nil:
			return false, err
		case metav1.GetControllerOf(live) == nil:
			r.conflicts.Remove(key)
			return true, p.adoptSecret(ctx, live)
		case !metav1.IsControlledBy(live, db):
			r.conflicts.Put(key, struct{}{})
			return true, conflict(db, "Secret", name)
		}
		r.conflicts.Remove(key)
		return true, nil
	}
	if _, known := r.conflicts.Get(key); known {
		// Known to be taken: a read tells whether it still is.
		if found, err := look(); found || err != nil {
			return nil, err
		}
		r.conflicts.Remove(key)
	}
	if !initialised {
		pw, err := password.Generate(r.random)
		if err != nil {
			return nil, err
		}
		var secret corev1.Secret
		desired := p.plan.Secret(pw)
		if tls.bundlePEM != nil {
			desired.WithAnnotations(map[string]string{builder.AnnotationBundle: tls.bundle}).
				WithData(map[string][]byte{builder.AuthorityKey: tls.bundlePEM})
		}
		if err := builder.Convert(desired, &secret); err != nil {
			return nil, err
		}
		created, err := secrets.Create(ctx, &secret, createOptions)
		if err == nil {
			r.expectations.Created(key, created.ResourceVersion)
			// What the pass made is what the servers will be asked with
			// once they run: kept as a read of it would keep it, so that
			// the pass that finds them ready does not wait for a GET
			// behind the creates of every other new Database.
			r.creds.Put(created.UID, p.credentialsOf(created, false))
			return []string{"Secret " + name}, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating Secret %s: %w", name, err)
		}
	}
	// Not in the cache, but it exists or the database was initialised:
	// look once at the live object before deciding.
	if found, err := look(); found || err != nil {
		return nil, err
	}
	// A namespace being deleted takes the Secret before the StatefulSet: no
	// person need restore anything. A dry-run create tells it, and creates
	// nothing.
	probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: db.Namespace}}
	if _, err := secrets.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: FieldManager}); NamespaceDeleting(err) {
		return nil, err
	}
	return nil, &status.Problem{Reason: status.ReasonCredentialsMissing, Message: fmt.Sprintf(
		"Secret %s/%s is gone but the database was initialised with its password; restore the Secret (keys username, password, database, host, port, uri), and the controller adopts it and continues. It will not generate a new password",
		db.Namespace, name)}
}

// credentialKeys are the keys a Secret must hold to be adopted.
var credentialKeys = []string{engine.SecretKeyUsername, engine.SecretKeyPassword, engine.SecretKeyDatabase,
	engine.SecretKeyHost, engine.SecretKeyPort, engine.SecretKeyURI}

// adoptSecret makes db the controller of live, a Secret of the credentials'
// name that no one controls, when it holds every key: its password is the
// one the data was initialised with, and it is never rewritten. It gets the
// controller's labels too, so that the cache sees it from then on.
func (p *pass) adoptSecret(ctx context.Context, live *corev1.Secret) error {
	r, db := p.r, p.db
	var missing []string
	for _, k := range credentialKeys {
		if len(live.Data[k]) == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return &status.Problem{Reason: status.ReasonResourceConflict, Recheck: true, Message: fmt.Sprintf(
			"Secret %s/%s is controlled by no one but lacks the keys %s, so it is not adopted: add them, or delete it if the database holds no data yet",
			db.Namespace, live.Name, strings.Join(missing, ", "))}
	}
	owners := append(slices.Clone(live.OwnerReferences), *metav1.NewControllerRef(db, dbv1alpha1.SchemeGroupVersion.WithKind("Database")))
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": live.ResourceVersion,
		"labels":          names.Labels(db),
		"ownerReferences": owners,
	}})
	if err != nil {
		return err
	}
	if _, err := r.kube.CoreV1().Secrets(db.Namespace).Patch(ctx, live.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("adopting Secret %s: %w", live.Name, err)
	}
	r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonAdopted,
		"Adopted Secret %s: it holds the credentials' keys and no one controlled it; its password is kept", live.Name)
	return nil
}

// addReadOnlyKeys gives a replicated Database's Secret the read-only
// Service's keys (ro-host, ro-uri, with the Secret's password) that it
// lacks: a Secret made before its engine replicated has none. It adds
// them once, and changes no key the Secret holds. It returns the Secret
// as it is now.
func (p *pass) addReadOnlyKeys(ctx context.Context, live *corev1.Secret) (*corev1.Secret, error) {
	r, db := p.r, p.db
	if !metav1.IsControlledBy(live, db) {
		return live, nil
	}
	add := map[string][]byte{}
	for k, v := range builder.ReadOnlyKeys(db, p.plan.Engine, string(live.Data[engine.SecretKeyPassword])) {
		if _, ok := live.Data[k]; !ok {
			add[k] = v
		}
	}
	if len(add) == 0 {
		return live, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": live.ResourceVersion}, "data": add})
	if err != nil {
		return nil, err
	}
	updated, err := r.kube.CoreV1().Secrets(db.Namespace).Patch(ctx, live.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("adding the read-only Service's keys to Secret %s: %w", live.Name, err)
	}
	r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonUpdated,
		"Updated Secret %s: added %s, for the read-only Service of the replicas; no other key changed",
		live.Name, strings.Join(slices.Sorted(maps.Keys(add)), " and "))
	return updated, nil
}

package reconcile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/password"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// ensureSecret creates the credentials Secret once. It never rewrites an
// existing Secret, so users may rotate the password, and it never makes a
// new password for a database whose StatefulSet already exists: that data
// was initialised with the old one.
func (p *pass) ensureSecret(ctx context.Context) error {
	r, db := p.r, p.db
	name := names.SecretName(db)
	key := ChildKey{Kind: "Secret", Namespace: db.Namespace, Name: name}
	existing, err := r.secrets.Secrets(db.Namespace).Get(name)
	if err == nil {
		r.expectations.Observed(key)
		if !metav1.IsControlledBy(existing, db) {
			return conflict(db, "Secret", name)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	if r.expectations.Pending(key) {
		return &WaitingError{Kind: "Secret", Name: name}
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
		case !metav1.IsControlledBy(live, db):
			r.conflicts.put(key, struct{}{})
			return true, conflict(db, "Secret", name)
		}
		r.conflicts.remove(key)
		return true, nil
	}
	if _, known := r.conflicts.get(key); known {
		// Known to be taken: a read tells whether it still is.
		if found, err := look(); found || err != nil {
			return err
		}
		r.conflicts.remove(key)
	}
	if p.statefulSet == nil {
		pw, err := password.Generate(r.random)
		if err != nil {
			return err
		}
		var secret corev1.Secret
		if err := builder.Convert(p.plan.Secret(pw), &secret); err != nil {
			return err
		}
		_, err = secrets.Create(ctx, &secret, createOptions)
		if err == nil {
			r.expectations.Created(key)
			p.created = append(p.created, "Secret "+name)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Secret %s: %w", name, err)
		}
	}
	// Not in the cache, but it exists or the database was initialised:
	// look once at the live object before deciding.
	if found, err := look(); found || err != nil {
		return err
	}
	return &status.Problem{Reason: status.ReasonCredentialsMissing, Message: fmt.Sprintf(
		"Secret %s/%s is gone but the database was initialised with its password; restore the Secret (keys username, password, database, host, port, uri) and the controller will continue. It will not generate a new password",
		db.Namespace, name)}
}

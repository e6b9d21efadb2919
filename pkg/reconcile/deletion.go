package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/plan"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// Reasons of the events and conditions of a deletion.
const (
	ReasonFinalBackupSkipped = "FinalBackupSkipped"
	ReasonSecretReleased     = "CredentialsRetained"
)

// FinalizerWanted reports whether db needs the controller at its deletion:
// for its final backup, or, under Retain, to release the credentials
// Secret from the garbage collector so that it stays with the volumes.
func FinalizerWanted(db *dbv1alpha1.Database) bool {
	return db.Spec.Retains() || backup.FinalWanted(db)
}

// ensureFinalizer adds the Database's finalizer when it is wanted, and
// removes it when it no longer is.
func (p *pass) ensureFinalizer(ctx context.Context) error {
	has := slices.Contains(p.db.Finalizers, dbv1alpha1.FinalizerDatabase)
	switch want := FinalizerWanted(p.db); {
	case want && !has:
		return p.r.patchFinalizers(ctx, p.db, append(slices.Clone(p.db.Finalizers), dbv1alpha1.FinalizerDatabase))
	case !want && has:
		return p.r.patchFinalizers(ctx, p.db, slices.DeleteFunc(slices.Clone(p.db.Finalizers),
			func(f string) bool { return f == dbv1alpha1.FinalizerDatabase }))
	}
	return nil
}

func (r *Reconciler) patchFinalizers(ctx context.Context, db *dbv1alpha1.Database, finalizers []string) error {
	patch, err := backup.FinalizersPatch(db.ResourceVersion, db.Finalizers, finalizers)
	if err != nil {
		return err
	}
	if _, err := r.dbs.DbcontrollerV1alpha1().Databases(db.Namespace).Patch(ctx, db.Name, types.JSONPatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating the finalizers: %w", err)
	}
	return nil
}

// deletionFindings is what the pass over a Database being deleted found.
type deletionFindings struct {
	// termination is the state of the deletion, for the status.
	termination *status.Termination
	// released says the finalizer is gone: the Database goes.
	released bool
	// created is what the pass created.
	created []string
	// statefulSet is the StatefulSet as a write left it, nil when none did.
	statefulSet *appsv1.StatefulSet
}

// runDeleting is the pass of a Database being deleted that holds the
// finalizer: the final backup, when wanted, then under Retain the release
// of the credentials Secret, then the finalizer goes and the garbage
// collector takes the children.
func (p *pass) runDeleting(ctx context.Context, observed plan.Observed) (deletionFindings, error) {
	db := p.db
	if backup.FinalWanted(db) {
		found, done, err := p.finalBackup(ctx, observed)
		if err != nil || !done {
			return found, err
		}
	}
	if db.Spec.Retains() {
		if err := p.releaseSecret(ctx); err != nil {
			return deletionFindings{termination: deleting}, err
		}
	}
	return deletionFindings{termination: deleting, released: true}, p.r.patchFinalizers(ctx, db,
		slices.DeleteFunc(slices.Clone(db.Finalizers), func(f string) bool { return f == dbv1alpha1.FinalizerDatabase }))
}

// deleting is the state of a deletion with nothing left to wait for.
var deleting = &status.Termination{Reason: status.ReasonDeleting, Message: "deleting"}

// finalBackup takes the final backup, as backup.Final decides, and
// reports whether it is done. A stopped Database is started at one replica
// for it. A namespace being deleted takes every volume with it: no backup.
func (p *pass) finalBackup(ctx context.Context, observed plan.Observed) (deletionFindings, bool, error) {
	r, db := p.r, p.db
	found := deletionFindings{termination: deleting}
	name := names.FinalBackupName(db)
	b, err := p.read.backup(db.Namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		b = nil
	case err != nil:
		return found, false, err
	}
	step, termination := backup.Final(db, b)
	switch step {
	case backup.FinalDone:
		return found, true, nil
	case backup.FinalSkipped:
		r.recorder.Event(db, corev1.EventTypeNormal, ReasonFinalBackupSkipped, "No final backup: the Database never served, so it holds no data")
		return found, true, nil
	case backup.FinalCreate:
		_, err := r.dbs.DbcontrollerV1alpha1().DatabaseBackups(db.Namespace).Create(ctx, backup.NewFinalBackup(db), createOptions)
		if NamespaceDeleting(err) {
			// What the user asked for, with its volumes: no Warning.
			r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonFinalBackupSkipped,
				"No final backup: namespace %s is being deleted, and every volume in it with it", db.Namespace)
			return found, true, nil
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return found, false, fmt.Errorf("creating the final DatabaseBackup %s: %w", name, err)
		}
		if err == nil {
			found.created = []string{"DatabaseBackup " + name}
		}
	case backup.FinalFailed:
		found.termination = termination
		return found, false, nil
	}
	found.termination = termination
	sts, err := p.serveForBackup(ctx, observed)
	found.statefulSet = sts
	return found, false, err
}

// serveForBackup keeps the server up for the final backup: one replica
// when the Database is stopped. It returns the StatefulSet it wrote, if any.
func (p *pass) serveForBackup(ctx context.Context, observed plan.Observed) (*appsv1.StatefulSet, error) {
	if p.db.Spec.DesiredReplicas() > 0 || observed.StatefulSet == nil {
		return nil, nil
	}
	started := p.db.DeepCopy()
	started.Spec.Replicas = ptr.To[int32](1)
	pl := plan.Compute(started, observed)
	if pl.Problem != nil {
		return nil, nil
	}
	sts, _, err := p.ensureStatefulSet(ctx, pl)
	return sts, err
}

// releaseSecret removes the Database's owner reference from the
// credentials Secret, so that it stays with the retained volumes, labels
// and all: a Database made again with the same name adopts it.
func (p *pass) releaseSecret(ctx context.Context) error {
	r, db := p.r, p.db
	name := names.SecretName(db)
	secret, err := p.read.secret(db.Namespace, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	i := slices.IndexFunc(secret.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == db.UID })
	if i < 0 {
		return nil
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": fmt.Sprintf("/metadata/ownerReferences/%d/uid", i), "value": string(db.UID)},
		{"op": "remove", "path": fmt.Sprintf("/metadata/ownerReferences/%d", i)},
	})
	if err != nil {
		return err
	}
	if _, err := r.kube.CoreV1().Secrets(db.Namespace).Patch(ctx, name, types.JSONPatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing Secret %s: %w", name, err)
	}
	r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonSecretReleased,
		"Kept Secret %s with the volumes (deletionPolicy Retain): a Database made again with this name uses it", name)
	return nil
}

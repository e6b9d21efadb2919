package reconcile

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/backup"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/plan"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// ReasonMajorUpgrade is the reason of a major upgrade's events; its
// failure is a problem (status.ReasonMajorUpgradeFailed), whose Warning the
// pass emits.
const ReasonMajorUpgrade = status.ReasonMajorUpgrade

// upgradeFindings is what the major upgrade step decided.
type upgradeFindings struct {
	// decided says the step ran: upgrade is then status.majorUpgrade (nil
	// for none); otherwise the status keeps what it had.
	decided bool
	upgrade *dbv1alpha1.MajorUpgradeStatus
	// dataVersion, once the data is upgraded, is the version it is now:
	// status.currentVersion, so that going back is a downgrade, refused.
	dataVersion string
	// failed is the failure to report, once the StatefulSet runs the old
	// version again.
	failed *status.Problem
	// created is what the step created.
	created []string
}

// stopsServers says the upgrade holds every server stopped: its data is
// being upgraded.
func (u upgradeFindings) stopsServers() bool {
	return u.upgrade != nil && u.upgrade.Phase == dbv1alpha1.MajorUpgradeUpgrading
}

// stoppedForUpgrade is what the replication step says of a replicated
// Database whose servers an upgrade stopped: the primary it had, and why
// no server replicates; nil for one that is not replicated.
func (p *pass) stoppedForUpgrade() *replicationFindings {
	rs := p.stored.Status.Replication
	if !p.plan.Replicated || rs == nil {
		return nil
	}
	return &replicationFindings{status: rs, condition: &metav1.Condition{Type: dbv1alpha1.ConditionReplicating, Status: metav1.ConditionFalse,
		Reason: status.ReasonMajorUpgrade, Message: fmt.Sprintf("no server runs while the data of the primary, %s, is upgraded; it stays the primary", rs.Primary)}}
}

// majorUpgrade moves a Database's data to a new major version in place,
// when spec.version asks for one (engine.MajorUpgrade): a DatabaseBackup
// first; then, with every server stopped, a Job upgrades the data of the
// first pod (a replicated Database's primary: plan.MajorUpgradeRefused;
// its replicas are seeded again from it when they start, by the engine's
// init script); then the new version starts, and a Job runs after it
// (PostgreSQL's statistics). The plan holds the StatefulSet at the old
// version until the data is upgraded (plan.Observed.MajorUpgrade). A
// failure of the backup or of the upgrade leaves the data as it was: the
// old version serves it again, and the status says why. Until the data
// is touched (the upgrade Job exists), a change of spec.version abandons
// the upgrade; after that, the upgrade goes on.
func (p *pass) majorUpgrade(ctx context.Context, e engine.Engine, sts *appsv1.StatefulSet, pods []*corev1.Pod) (upgradeFindings, error) {
	db := p.db
	found := upgradeFindings{decided: true}
	mu := e.Runtime().MajorUpgrade
	if mu == nil {
		return found, nil
	}
	u := db.Status.MajorUpgrade.DeepCopy()
	if u != nil && u.To != db.Spec.Version && u.Phase != dbv1alpha1.MajorUpgradeAnalyzing {
		touched, err := p.upgradeJobExists(u)
		if err != nil {
			return found, err
		}
		if !touched || u.Phase == dbv1alpha1.MajorUpgradeFailed {
			if err := p.deleteUpgradeJobs(ctx, u); err != nil {
				return found, err
			}
			p.r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonMajorUpgrade,
				"Upgrade from %s to %s abandoned: spec.version is %s; the data is %s's as it was, and DatabaseBackup %s is kept",
				u.From, u.To, db.Spec.Version, u.From, u.Backup)
			u = nil
		}
	}
	if u == nil {
		u = p.beginUpgrade(e, sts)
		if u == nil {
			return found, nil
		}
	}
	found.upgrade = u
	var err error
	switch u.Phase {
	case dbv1alpha1.MajorUpgradeBackingUp:
		err = p.backUpForUpgrade(ctx, u, &found)
	case dbv1alpha1.MajorUpgradeUpgrading:
		err = p.upgradeData(ctx, e, u, pods, &found)
	case dbv1alpha1.MajorUpgradeAnalyzing:
		found.dataVersion = u.To
		err = p.afterUpgrade(ctx, e, u, sts, &found)
	case dbv1alpha1.MajorUpgradeFailed:
		if u.StoppedTime == nil {
			// The backup failed: once it is deleted, take it again.
			if _, berr := p.read.backup(db.Namespace, u.Backup); apierrors.IsNotFound(berr) {
				u.Phase, u.Message = dbv1alpha1.MajorUpgradeBackingUp, ""
				return found, p.backUpForUpgrade(ctx, u, &found)
			}
		}
		found.failed = &status.Problem{Reason: status.ReasonMajorUpgradeFailed, Message: u.Message}
	}
	return found, err
}

// beginUpgrade is the upgrade spec.version asks of a Database that runs,
// at its first step, or nil when none is asked or it cannot begin (the
// plan says why).
func (p *pass) beginUpgrade(e engine.Engine, sts *appsv1.StatefulSet) *dbv1alpha1.MajorUpgradeStatus {
	db := p.db
	from, to := db.Status.CurrentVersion, db.Spec.Version
	running := engine.Running{Version: from, FeatureCompatibilityVersion: db.Status.FeatureCompatibilityVersion}
	if !e.Runtime().MajorUpgrade.Needed(from, to) || e.CheckVersionChange(running, to) != nil ||
		plan.MajorUpgradeRefused(db, e) != "" || sts == nil || builder.ImageOf(sts) == "" {
		return nil
	}
	if _, err := e.Image(to, db.Spec.Image); err != nil {
		return nil
	}
	now := metav1.NewTime(p.r.clock.Now())
	u := &dbv1alpha1.MajorUpgradeStatus{From: from, To: to, FromImage: builder.ImageOf(sts), Phase: dbv1alpha1.MajorUpgradeBackingUp,
		Backup: names.MajorUpgradeBackupName(db.Name, to, db.Generation), StartTime: &now}
	p.r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonMajorUpgrade,
		"Upgrading the data from %s %s to %s in place: first a backup, DatabaseBackup %s", db.Spec.Engine, from, to, u.Backup)
	return u
}

// backUpForUpgrade takes the backup before an upgrade, and once it
// completed moves the upgrade on to stopping the server.
func (p *pass) backUpForUpgrade(ctx context.Context, u *dbv1alpha1.MajorUpgradeStatus, found *upgradeFindings) error {
	r, db := p.r, p.db
	key := ChildKey{Kind: "DatabaseBackup", Namespace: db.Namespace, Name: u.Backup}
	r.expectations.Look(key)
	b, err := p.read.backup(db.Namespace, u.Backup)
	switch {
	case apierrors.IsNotFound(err):
		if r.expectations.Pending(key) {
			return &WaitingError{Kind: "DatabaseBackup", Name: u.Backup}
		}
		created, err := r.dbs.DbcontrollerV1alpha1().DatabaseBackups(db.Namespace).Create(ctx, backup.NewMajorUpgradeBackup(db, u.Backup), createOptions)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating DatabaseBackup %s: %w", u.Backup, err)
		}
		if err == nil {
			r.expectations.Created(key, created.ResourceVersion)
			found.created = append(found.created, "DatabaseBackup "+u.Backup)
		}
		return nil
	case err != nil:
		return err
	}
	r.expectations.Observed(key)
	switch b.Status.Phase {
	case dbv1alpha1.BackupCompleted:
		u.Phase = dbv1alpha1.MajorUpgradeUpgrading
		r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonMajorUpgrade,
			"DatabaseBackup %s completed: stopping %s %s to upgrade its data to %s", u.Backup, db.Spec.Engine, u.From, u.To)
	case dbv1alpha1.BackupFailed:
		u.Phase = dbv1alpha1.MajorUpgradeFailed
		u.Message = fmt.Sprintf("the backup taken before the upgrade, DatabaseBackup %s, failed (%s), so nothing was changed and %s serves as before. "+
			"Delete it to take it again (kubectl delete dbbackup -n %s %s), or set spec.version back to %s",
			u.Backup, b.Status.Message, u.From, db.Namespace, u.Backup, u.From)
		// The problem's Warning says it, once.
		found.failed = &status.Problem{Reason: status.ReasonMajorUpgradeFailed, Message: u.Message}
	}
	return nil
}

// upgradeData runs the upgrade Job once the server has stopped (the plan
// runs no pod), and reads how it ended.
func (p *pass) upgradeData(ctx context.Context, e engine.Engine, u *dbv1alpha1.MajorUpgradeStatus, pods []*corev1.Pod, found *upgradeFindings) error {
	r, db := p.r, p.db
	if len(pods) > 0 {
		return nil // stopping
	}
	now := metav1.NewTime(r.clock.Now())
	if u.StoppedTime == nil {
		u.StoppedTime = &now
	}
	name := builder.MajorUpgradeJobName(db, u.To)
	claim := names.ClaimPrefix(db) + "0"
	job, created, err := p.ownJob(ctx, name, &found.created, func() (*batchv1.Job, error) {
		image, err := e.Image(u.To, db.Spec.Image)
		if err != nil {
			return nil, &status.Problem{Reason: status.ReasonUnknownVersion, Message: err.Error()}
		}
		return jobObject(builder.NewMajorUpgradeJob(db, e, u.FromImage, image, u.To, claim)), nil
	})
	if job == nil || err != nil {
		return err
	}
	if created {
		r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonMajorUpgrade,
			"Stopped %s %s: Job %s upgrades the data of claim %s to %s", db.Spec.Engine, u.From, name, claim, u.To)
		return nil
	}
	finished, succeeded, why := builder.JobFinished(job)
	switch {
	case !finished:
	case succeeded:
		u.Phase, u.UpgradedTime = dbv1alpha1.MajorUpgradeAnalyzing, &now
		found.dataVersion = u.To
		took := now.Sub(u.StoppedTime.Time).Round(time.Second)
		if rs := db.Status.Replication; rs != nil && db.Spec.DesiredReplicas() > 1 {
			r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonMajorUpgrade,
				"Upgraded the data of the primary, %s, from %s to %s in %s with the servers stopped: starting %s %s; the replicas' data of %s, which %s cannot follow, is discarded and seeded again from %s",
				rs.Primary, u.From, u.To, took, db.Spec.Engine, u.To, u.From, u.To, rs.Primary)
		} else {
			r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonMajorUpgrade,
				"Upgraded the data from %s to %s in %s with the server stopped: starting %s %s", u.From, u.To, took, db.Spec.Engine, u.To)
		}
	default:
		words, err := p.upgradeJobWords(builder.JobMajorUpgrade)
		if err != nil {
			return err
		}
		if words == "" {
			words = why
		}
		u.Phase = dbv1alpha1.MajorUpgradeFailed
		u.Message = fmt.Sprintf("the upgrade from %s to %s failed, and %s serves its data as it was. Job %s said: %s. "+
			"To try again once the cause is mended, set spec.version back to %s, then to %s",
			u.From, u.To, u.From, name, words, u.From, u.To)
		found.failed = &status.Problem{Reason: status.ReasonMajorUpgradeFailed, Message: u.Message}
	}
	return nil
}

// afterUpgrade runs the Job that follows an upgrade once every replica of
// the new version is ready, and ends the upgrade when it finished: its
// failure costs no data, and is said in a Warning.
func (p *pass) afterUpgrade(ctx context.Context, e engine.Engine, u *dbv1alpha1.MajorUpgradeStatus, sts *appsv1.StatefulSet, found *upgradeFindings) error {
	r, db := p.r, p.db
	image, err := e.Image(db.Spec.Version, db.Spec.Image)
	if err != nil {
		return nil // the plan says why
	}
	after := e.Runtime().MajorUpgrade.After
	replicas := db.Spec.DesiredReplicas()
	if after != "" && (replicas == 0 || !status.RolledOut(sts, replicas, image) || sts.Status.ReadyReplicas < replicas) {
		return nil
	}
	name := builder.AfterMajorUpgradeJobName(db, u.To)
	var words string
	if after != "" {
		job, created, err := p.ownJob(ctx, name, &found.created, func() (*batchv1.Job, error) {
			return jobObject(builder.NewAfterMajorUpgradeJob(db, e, image, u.To)), nil
		})
		if job == nil || created || err != nil {
			return err
		}
		finished, succeeded, why := builder.JobFinished(job)
		if !finished {
			return nil
		}
		if !succeeded {
			if words, err = p.upgradeJobWords(builder.JobAfterMajorUpgrade); err != nil {
				return err
			}
			if words == "" {
				words = why
			}
		}
	}
	if err := p.deleteUpgradeJobs(ctx, u); err != nil {
		return err
	}
	found.upgrade = nil
	took := r.clock.Now().Sub(u.StartTime.Time).Round(time.Second)
	stopped := u.UpgradedTime.Sub(u.StoppedTime.Time).Round(time.Second)
	if words != "" {
		r.recorder.Eventf(db, corev1.EventTypeWarning, ReasonMajorUpgrade,
			"%s %s serves the upgraded data, but Job %s failed after it (%s): the planner's statistics may be missing until ANALYZE runs. The upgrade took %s, %s of it with the data being upgraded",
			db.Spec.Engine, u.To, name, words, took, stopped)
		return nil
	}
	r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonMajorUpgrade,
		"%s %s serves the upgraded data, and Job %s ran after it. The upgrade took %s, %s of it with the data being upgraded; DatabaseBackup %s of %s is kept",
		db.Spec.Engine, u.To, name, took, stopped, u.Backup, u.From)
	return nil
}

// upgradeJobExists reports whether u's upgrade Job exists: the data may
// have been touched.
func (p *pass) upgradeJobExists(u *dbv1alpha1.MajorUpgradeStatus) (bool, error) {
	name := builder.MajorUpgradeJobName(p.db, u.To)
	_, err := p.read.job(p.db.Namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return p.r.expectations.Pending(ChildKey{Kind: "Job", Namespace: p.db.Namespace, Name: name}), nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// deleteUpgradeJobs deletes the Jobs of u that exist, with their pods.
func (p *pass) deleteUpgradeJobs(ctx context.Context, u *dbv1alpha1.MajorUpgradeStatus) error {
	db := p.db
	for _, name := range []string{builder.MajorUpgradeJobName(db, u.To), builder.AfterMajorUpgradeJobName(db, u.To)} {
		job, err := p.read.job(db.Namespace, name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if !metav1.IsControlledBy(job, db) {
			continue
		}
		if err := p.r.deleteJob(ctx, job); err != nil {
			return err
		}
	}
	return nil
}

// upgradeJobWords is the termination message of the newest failed pod of
// db's Job of kind job: what the upgrade said when it failed, or "".
func (p *pass) upgradeJobWords(job string) (string, error) {
	pods, err := indexedAs[*corev1.Pod](p.read, srcPods, IndexInstance, instanceKey(p.db), labels.SelectorFromSet(labels.Set{builder.LabelJob: job}))
	if err != nil {
		return "", err
	}
	var newest *corev1.Pod
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodFailed && (newest == nil || newest.CreationTimestamp.Before(&pod.CreationTimestamp)) {
			newest = pod
		}
	}
	if newest == nil {
		return "", nil
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), newest.Status.InitContainerStatuses...), newest.Status.ContainerStatuses...) {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			if t.Message != "" {
				return t.Message, nil
			}
			return fmt.Sprintf("container %s exited with %d (%s)", cs.Name, t.ExitCode, t.Reason), nil
		}
	}
	return "", nil
}

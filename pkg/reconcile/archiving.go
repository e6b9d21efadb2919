package reconcile

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/ha"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// ArchivePoll is how often the primary of a Database that archives its
// WAL is asked how its archiving goes: it bounds how stale status.archive
// is, and how late a failing archive is reported.
const ArchivePoll = 30 * time.Second

// Archiver asks the primary at host:port how its archiving goes (package
// pgsql's Archiver).
type Archiver func(ctx context.Context, host string, port int32, cred ha.Credentials) (*dbv1alpha1.ArchiveStatus, error)

// archiveFindings is what the archiving step found, for the status.
type archiveFindings struct {
	// wanted says the spec asks for continuous archiving.
	wanted bool
	// archive and condition are the primary's answer and its condition;
	// nil when it did not answer (the status keeps the last ones).
	archive   *dbv1alpha1.ArchiveStatus
	condition *metav1.Condition
	// pollAfter is when to ask again; 0 for no need.
	pollAfter time.Duration
}

// archiving asks the primary among pods how its archiving goes, for a
// Database with spec.backup.continuous whose servers archive through
// toolsImage: the ready pod the client Service sends clients to (the
// replication status's primary, or the one server of a Database that is
// not replicated).
func (p *pass) archiving(ctx context.Context, toolsImage string, pods []*corev1.Pod, repl *replicationFindings) (archiveFindings, error) {
	db := p.db
	if !archiveWanted(db) || p.plan.Engine == nil || p.plan.Engine.Runtime().Archiving == nil {
		return archiveFindings{}, nil
	}
	found := archiveFindings{wanted: true}
	if toolsImage == "" {
		c := status.ArchiveUnavailable("the servers archive through the controller's own image, and this controller runs without --tools-image: start it with --tools-image=<its image>")
		found.condition = &c
		return found, nil
	}
	found.pollAfter = ArchivePoll
	primary := p.primaryName(p.replicationStatus(repl))
	if primary == "" {
		return found, nil
	}
	var pod *corev1.Pod
	for _, candidate := range pods {
		if candidate.Name == primary && answers(candidate) {
			pod = candidate
		}
	}
	if pod == nil {
		return found, nil
	}
	cred, err := p.credentials(ctx)
	if err != nil {
		return found, err
	}
	a, err := p.r.archiver(ctx, pod.Status.PodIP, p.plan.Engine.Runtime().Port, cred)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("The primary did not say how its archiving goes", "pod", klog.KObj(pod), "err", err)
		return found, nil
	}
	merged := status.MergeArchive(db.Status.Archive, a)
	c := status.ArchiveCondition(merged)
	found.archive, found.condition = merged, &c
	return found, nil
}

// replicationStatus is the replication status the pass works from: the
// replication step's, when it ran, else the one stored.
func (p *pass) replicationStatus(repl *replicationFindings) *dbv1alpha1.ReplicationStatus {
	if repl != nil && repl.status != nil {
		return repl.status
	}
	return p.db.Status.Replication
}

// primaryName is the pod the client Service sends clients to: a
// replicated Database's recorded primary ("" while none is), the one
// server of another.
func (p *pass) primaryName(rs *dbv1alpha1.ReplicationStatus) string {
	if !p.plan.Replicated {
		return names.PodName(p.db, 0)
	}
	if rs == nil {
		return ""
	}
	return rs.Primary
}

// answers reports whether the controller may talk SQL to pod's server: it
// is ready, not being deleted, and has an address.
func answers(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.PodIP != "" && podReady(pod)
}

// archiveWanted says db's spec asks for continuous archiving.
func archiveWanted(db *dbv1alpha1.Database) bool {
	return db.Spec.Backup != nil && db.Spec.Backup.Continuous != nil && db.Spec.Backup.ObjectStore != nil
}

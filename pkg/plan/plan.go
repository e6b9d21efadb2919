// Package plan computes, as one pure function, everything a sync pass of a
// Database needs to decide: whether the spec can be run at all (the
// validation problem), the engine and its image, every desired child as an
// apply configuration, and the volume claims to grow. The reconciler writes
// what the plan says; the benchmark's floor writes the same plan with no
// controller around it.
package plan

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/drift"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/engine/registry"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// Observed is what the plan reads of the cluster, from the listers.
type Observed struct {
	// StatefulSet is the Database's StatefulSet when the Database controls
	// it, nil otherwise.
	StatefulSet *appsv1.StatefulSet
	// Claims are the claims labelled with the Database's selector labels.
	Claims []*corev1.PersistentVolumeClaim
	// Restore, when set, is the backup the pods initialise their data
	// from: the restore has not completed yet.
	Restore *builder.RestoreSource
	// ToolsImage is the controller's own image, whose binary the servers
	// that archive to an object store run; "" when it is not known, and
	// they cannot archive.
	ToolsImage string
	// Stranded says the primary's node is cordoned, no other pod of the
	// Database runs on a node that is not, and every other pod is ready:
	// no switchover can move the primary off before a drain, and it may be
	// let go (builder.NewDisruptionBudgets).
	Stranded bool
	// Parameters are the parameters asked for: spec.parameters over the
	// data of the ConfigMap of spec.parametersConfigMap (nil when that is
	// not found, or refused).
	Parameters map[string]string
	// CertificateSerial is the serial number of the certificate in the
	// Database's TLS Secret, "" when there is none: the pods of an engine
	// whose servers read it only at start carry it
	// (builder.WithCertificateSerial).
	CertificateSerial string
	// MajorUpgrade is the in-place major upgrade as the pass decided it
	// (reconcile's majorUpgrade step), nil when there is none: until the
	// data is upgraded, the StatefulSet keeps the old version's image,
	// and while it is upgraded, it runs no pod.
	MajorUpgrade *dbv1alpha1.MajorUpgradeStatus
}

// Plan is what one sync pass of a Database should bring about.
type Plan struct {
	// Database is the Database planned for.
	Database *dbv1alpha1.Database
	// Problem, when set, is why the spec cannot be run until a person acts;
	// then nothing below Endpoint is set, and nothing may be written but status.
	Problem *status.Problem
	// Engine is the Database's engine; nil when the engine is unknown.
	Engine engine.Engine
	// Endpoint is host:port of the client Service; "" when the engine is unknown.
	Endpoint string
	// Image is the image the StatefulSet runs.
	Image string
	// EndOfLife, when set, says that the version that runs (spec.version,
	// or with a problem the version that ran last) no longer gets upstream
	// rebuilds; the Database still runs.
	EndOfLife string
	// NewFeatureCompatibilityVersion is the featureCompatibilityVersion of
	// new data at spec.version, for an engine that has one.
	NewFeatureCompatibilityVersion string
	// HeadlessService, Service and StatefulSet are the desired children, in
	// the order they are made, each annotated with the digest of itself
	// (drift.AppliedAnnotation). The credentials Secret needs a password:
	// Secret builds it.
	HeadlessService *corev1ac.ServiceApplyConfiguration
	Service         *corev1ac.ServiceApplyConfiguration
	StatefulSet     *appsv1ac.StatefulSetApplyConfiguration
	// Replicated says the Database runs one primary and replicas that
	// stream from it (see Replicated); ReadOnlyService, then, is the
	// Service of the replicas.
	Replicated      bool
	ReadOnlyService *corev1ac.ServiceApplyConfiguration
	// DisruptionBudgets are, for a replicated Database that asks for two
	// replicas or more, its PodDisruptionBudgets (builder.NewDisruptionBudgets);
	// none otherwise, and those that exist are deleted.
	DisruptionBudgets []*policyv1ac.PodDisruptionBudgetApplyConfiguration
	// Grow lists the data volume claims below spec.storage.size.
	Grow []ClaimGrowth
	// StartParameters are the parameters the servers read at start, on
	// their command line (StartParameters).
	StartParameters map[string]string
}

// ClaimGrowth is one data volume claim to grow, from its request to the
// spec's size.
type ClaimGrowth struct {
	Name string
	// ResourceVersion is the claim's as observed.
	ResourceVersion string
	From, To        resource.Quantity
}

// Secret builds the credentials Secret with password. It is created once
// and never written again.
func (p *Plan) Secret(password string) *corev1ac.SecretApplyConfiguration {
	return builder.NewSecret(p.Database, p.Engine, password)
}

// Compute plans db given what was observed. It is pure.
func Compute(db *dbv1alpha1.Database, observed Observed) *Plan {
	if held := heldForUpgrade(db, observed.MajorUpgrade); held != nil {
		p := compute(held, observed)
		if p.Problem == nil && p.Replicated {
			// Kept while the servers are stopped for the upgrade: they
			// start again with the same number of replicas.
			p.DisruptionBudgets = disruptionBudgets(db, observed)
		}
		return p
	}
	return compute(db, observed)
}

// heldForUpgrade is db as its StatefulSet runs while a major upgrade
// holds it at the old version: the old version and its image, with no
// replica while the data is upgraded; nil when none holds it.
func heldForUpgrade(db *dbv1alpha1.Database, u *dbv1alpha1.MajorUpgradeStatus) *dbv1alpha1.Database {
	if u == nil || u.Phase == dbv1alpha1.MajorUpgradeAnalyzing {
		return nil
	}
	held := db.DeepCopy()
	held.Spec.Version, held.Spec.Image = u.From, u.FromImage
	if u.Phase == dbv1alpha1.MajorUpgradeUpgrading {
		held.Spec.Replicas = new(int32)
	}
	return held
}

// MajorUpgradeRefused says why db's change of spec.version, which needs an
// in-place major upgrade, cannot have one, or "". The data upgraded is the
// first pod's: a replicated Database's primary must be <name>-0, so that
// it starts first (the StatefulSet starts its pods in order) and its
// replicas, which cannot follow it with the old version's data, are seeded
// again from it. A Database that archives its WAL would need its archive
// started again, which the controller does not do yet; a stopped one has
// no server to back up first.
func MajorUpgradeRefused(db *dbv1alpha1.Database, e engine.Engine) string {
	from, to := db.Status.CurrentVersion, db.Spec.Version
	first := names.PodName(db, 0)
	switch {
	case db.Spec.DesiredReplicas() == 0:
		return fmt.Sprintf("%s %s cannot read the data that %s wrote, and the data is upgraded in place only while the Database runs, to back it up first: "+
			"start it (spec.replicas), or set spec.version back to %s", db.Spec.Engine, to, from, from)
	case Replicated(db, e) && (db.Status.Replication == nil || db.Status.Replication.Primary != first):
		return fmt.Sprintf("%s %s cannot read the data that %s wrote: the controller upgrades the primary's data in place and seeds the replicas again from it, "+
			"and the primary must be %s, the pod that starts first. Switch over to it (spec.replication.primary: %s) and wait for Running, or set spec.version back to %s",
			db.Spec.Engine, to, from, first, first, from)
	case db.Spec.Backup != nil && db.Spec.Backup.Continuous != nil:
		return fmt.Sprintf("%s %s cannot read the data that %s wrote, and the controller does not yet upgrade in place a Database that archives its WAL (spec.backup.continuous). "+
			"Set spec.version back to %s, or back this Database up and restore the backup into a new Database of version %s (spec.restore.backup)",
			db.Spec.Engine, to, from, from, to)
	}
	return ""
}

func compute(db *dbv1alpha1.Database, observed Observed) *Plan {
	p := &Plan{Database: db}
	e, err := registry.Lookup(string(db.Spec.Engine))
	if err != nil {
		p.Problem = &status.Problem{Reason: status.ReasonUnknownVersion, Message: err.Error()}
		return p
	}
	p.Engine = e
	p.Endpoint = names.Endpoint(db, e.Runtime().Port)
	// Until the spec is accepted, what runs is the version that ran last.
	p.EndOfLife = e.EndOfLife(db.Status.CurrentVersion)
	image, err := e.Image(db.Spec.Version, db.Spec.Image)
	if err != nil {
		p.Problem = &status.Problem{Reason: status.ReasonUnknownVersion, Message: err.Error()}
		return p
	}
	running := engine.Running{Version: db.Status.CurrentVersion, FeatureCompatibilityVersion: db.Status.FeatureCompatibilityVersion}
	if err := e.CheckVersionChange(running, db.Spec.Version); err != nil {
		var refusal *engine.VersionChangeError
		if !errors.As(err, &refusal) {
			refusal = &engine.VersionChangeError{Reason: engine.ReasonDowngradeRefused, Message: err.Error()}
		}
		p.Problem = &status.Problem{Reason: refusal.Reason, Message: refusal.Message}
		return p
	}
	if mu := e.Runtime().MajorUpgrade; mu != nil && mu.Needed(db.Status.CurrentVersion, db.Spec.Version) {
		why := MajorUpgradeRefused(db, e)
		if why != "" {
			p.Problem = &status.Problem{Reason: engine.ReasonMajorUpgradeRefused, Message: why}
			return p
		}
		if observed.MajorUpgrade == nil {
			// Not begun: the old version's image, as the StatefulSet has it.
			from := builder.ImageOf(observed.StatefulSet)
			if from == "" {
				from, _ = e.Image(db.Status.CurrentVersion, "")
			}
			return compute(heldForUpgrade(db, &dbv1alpha1.MajorUpgradeStatus{From: db.Status.CurrentVersion, FromImage: from}), observed)
		}
	}
	p.Image = image
	p.EndOfLife = e.EndOfLife(db.Spec.Version)
	p.NewFeatureCompatibilityVersion = e.FeatureCompatibilityVersion(db.Spec.Version)

	storage := builder.StorageOf(db)
	if observed.StatefulSet != nil {
		// The claim template cannot change once created; keep what is there.
		if existing, ok := builder.StorageOfStatefulSet(observed.StatefulSet); ok {
			storage = existing
		}
	}
	p.Replicated = Replicated(db, e)
	p.HeadlessService = stamp(builder.NewHeadlessService(db, e))
	// The client Service selects the primary's role label once the
	// controller has given it: until then, the one server that exists.
	primaryOnly := p.Replicated && db.Status.Replication != nil && db.Status.Replication.Primary != ""
	p.Service = stamp(builder.NewService(db, e, primaryOnly))
	if p.Replicated {
		p.ReadOnlyService = stamp(builder.NewReadOnlyService(db, e))
		p.DisruptionBudgets = disruptionBudgets(db, observed)
	}
	sts := builder.NewStatefulSet(db, e, image, storage, observed.Restore, p.Replicated)
	if keep := replicasToKeep(db); keep > *sts.Spec.Replicas {
		// Scaling down never removes the primary: the StatefulSet keeps it
		// until a switchover has moved the role to a lower ordinal.
		sts.Spec.WithReplicas(keep)
	}
	if observed.ToolsImage != "" {
		builder.WithArchiving(sts, db, e, observed.ToolsImage)
	}
	p.StartParameters = StartParameters(db, e, observed.StatefulSet == nil, observed.Parameters)
	builder.WithTLS(sts, db, e, db.Spec.TLSMode())
	if db.Spec.TLSMode() != dbv1alpha1.TLSDisabled {
		builder.WithCertificateSerial(sts, e, observed.CertificateSerial)
	}
	builder.WithParameters(sts, e, p.StartParameters)
	builder.WithExporter(sts, db, e)
	p.StatefulSet = stamp(sts)
	p.Grow = claimsToGrow(db, observed.Claims)
	return p
}

// disruptionBudgets are the PodDisruptionBudgets of a replicated db: none
// below two replicas.
func disruptionBudgets(db *dbv1alpha1.Database, observed Observed) []*policyv1ac.PodDisruptionBudgetApplyConfiguration {
	if db.Spec.DesiredReplicas() < 2 {
		return nil
	}
	var budgets []*policyv1ac.PodDisruptionBudgetApplyConfiguration
	for _, b := range builder.NewDisruptionBudgets(db, observed.Stranded) {
		budgets = append(budgets, stamp(b))
	}
	return budgets
}

// StartParameters are the parameters asked for that db's servers read at
// start: those a server last accepted (status.parameters.start), so that a
// value it refuses never reaches a pod; before any was checked, those of
// asked (Observed.Parameters), for a Database whose StatefulSet is yet to
// be made (creating: there is no data to lose, and no restart to take
// them), and none for one made before spec.parameters (its pods keep
// running as they are until a server checked them).
func StartParameters(db *dbv1alpha1.Database, e engine.Engine, creating bool, asked map[string]string) map[string]string {
	pr := e.Runtime().Parameters
	if pr == nil {
		return nil
	}
	if ps := db.Status.Parameters; ps != nil {
		return ps.Start
	}
	if !creating {
		return nil
	}
	var start map[string]string
	for name, value := range asked {
		if pr.AtStart(name) && !slices.Contains(pr.Owned, name) {
			if start == nil {
				start = map[string]string{}
			}
			start[name] = value
		}
	}
	return start
}

// Replicated reports whether db runs as one primary and replicas that
// stream from it: an engine that replicates, with two replicas or more
// asked for, or once it was replicated (scaled down to one, or to zero and
// back, it keeps its primary).
func Replicated(db *dbv1alpha1.Database, e engine.Engine) bool {
	if e.Runtime().Replication == nil {
		return false
	}
	return db.Spec.DesiredReplicas() >= 2 || db.Status.Replication != nil
}

// replicasToKeep is how many replicas the StatefulSet keeps so that the
// primary is not removed by a scale-down: its ordinal plus one, while
// spec.replicas is lower but not zero (zero stops every server, the
// primary with the others, and keeps it primary).
func replicasToKeep(db *dbv1alpha1.Database) int32 {
	if db.Spec.DesiredReplicas() == 0 || db.Status.Replication == nil {
		return 0
	}
	ordinal, ok := names.Ordinal(db, db.Status.Replication.Primary)
	if !ok {
		return 0
	}
	return int32(ordinal) + 1
}

// annotatable is an apply configuration that takes annotations.
type annotatable[T any] interface {
	WithAnnotations(map[string]string) T
}

// stamp records on a child the digest of what is applied, so that a field
// the spec stops setting is removed (see drift.AppliedAnnotation).
func stamp[T annotatable[T]](ac T) T {
	return ac.WithAnnotations(map[string]string{drift.AppliedAnnotation: drift.Digest(ac)})
}

// claimsToGrow lists the data volume claims of db's StatefulSet whose
// request is below spec.storage.size. Claim templates cannot change, so
// this is how a volume grows; it never shrinks one.
func claimsToGrow(db *dbv1alpha1.Database, claims []*corev1.PersistentVolumeClaim) []ClaimGrowth {
	want := db.Spec.Storage.Size
	prefix := names.ClaimPrefix(db)
	var out []ClaimGrowth
	for _, claim := range claims {
		if !strings.HasPrefix(claim.Name, prefix) {
			continue
		}
		have := claim.Spec.Resources.Requests[corev1.ResourceStorage]
		if want.Cmp(have) > 0 {
			out = append(out, ClaimGrowth{Name: claim.Name, ResourceVersion: claim.ResourceVersion, From: have, To: want})
		}
	}
	return out
}

package reconcile

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/ha"
)

// MonitoringClient makes, on a primary, the server account the exporters
// log in as (package pgsql's or mysqlsql's Monitoring).
type MonitoringClient interface {
	// EnsureUser makes engine.MonitoringUser, or mends its privileges,
	// unless it has them; changed says it wrote.
	EnsureUser(ctx context.Context, host string, port int32, cred ha.Credentials) (changed bool, err error)
}

// MonitoringPoll is how soon a primary that could not make the monitoring
// user is asked again.
const MonitoringPoll = time.Minute

// Reasons of the monitoring user's events.
const (
	ReasonMonitoringUserCreated = "MonitoringUserCreated"
	ReasonMonitoringUserFailed  = "MonitoringUserFailed"
)

// monitoringFindings is what the monitoring step found: when to ask the
// primary again (0 for no need).
type monitoringFindings struct {
	pollAfter time.Duration
}

// ensureMonitoringUser gives a monitored Database's servers the account
// their exporters log in as: made on the primary (the one server), which
// replicates it. Once a primary has it, the Database's UID is remembered,
// and the servers are not asked again while the controller runs. A
// failure does not hold the pass: the exporters report it (their up
// metric is 0), one Warning event says why, and the primary is asked
// again after MonitoringPoll.
func (p *pass) ensureMonitoringUser(ctx context.Context, pods []*corev1.Pod, repl *replicationFindings) monitoringFindings {
	r, db := p.r, p.db
	client := r.monitoring[db.Spec.Engine]
	if !db.Spec.Monitored() || client == nil || p.plan.Engine == nil || p.plan.Engine.Runtime().Exporter == nil {
		return monitoringFindings{}
	}
	if _, done := r.monitoringUsers.Get(db.UID); done {
		return monitoringFindings{}
	}
	servers, _ := p.parameterServers(pods, repl)
	if len(servers) == 0 {
		// Once one serves: its readiness starts a pass.
		return monitoringFindings{}
	}
	primary := servers[0]
	logger := klog.FromContext(ctx)
	cred, err := p.credentials(ctx)
	if err == nil {
		var changed bool
		changed, err = client.EnsureUser(ctx, primary.Status.PodIP, p.plan.Engine.Runtime().Port, cred)
		if err == nil {
			r.monitoringUsers.Put(db.UID, struct{}{})
			r.monitoringFailures.Remove(db.UID)
			if changed {
				r.recorder.Eventf(db, corev1.EventTypeNormal, ReasonMonitoringUserCreated,
					"Made the monitoring user %s on %s, which the exporters log in as", engine.MonitoringUser, primary.Name)
			}
			return monitoringFindings{}
		}
	}
	msg := fmt.Sprintf("Cannot make the monitoring user %s on %s, so the exporters cannot log in (their up metric is 0): %v; trying again every %s",
		engine.MonitoringUser, primary.Name, err, MonitoringPoll)
	logger.Info("Making the monitoring user failed", "pod", klog.KObj(primary), "err", err)
	if last, said := r.monitoringFailures.Get(db.UID); !said || last != msg {
		r.monitoringFailures.Put(db.UID, msg)
		r.recorder.Event(db, corev1.EventTypeWarning, ReasonMonitoringUserFailed, msg)
	}
	return monitoringFindings{pollAfter: MonitoringPoll}
}

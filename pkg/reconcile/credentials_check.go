package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dbcontroller/database-controller/pkg/login"
	"github.com/dbcontroller/database-controller/pkg/names"
	"github.com/dbcontroller/database-controller/pkg/status"
)

// credentialsRefusal gives the login checker what to log in to for the
// Database, its ready servers and its Secret's credentials, and returns the
// cause to report when the servers refused them at the last check. The
// check runs off the pass (package login), which comes back when its
// answer changes; the status decides when the cause is the one to report.
func (p *pass) credentialsRefusal(ctx context.Context, pods []*corev1.Pod) (*status.Cause, error) {
	checker, db := p.r.logins, p.db
	if checker == nil || p.plan.Engine == nil || !checker.Checks(string(db.Spec.Engine)) {
		return nil, nil
	}
	key := types.NamespacedName{Namespace: db.Namespace, Name: db.Name}
	var servers []login.Server
	for _, pod := range slices.SortedFunc(slices.Values(pods), func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) }) {
		if podReady(pod) && pod.DeletionTimestamp == nil && pod.Status.PodIP != "" {
			servers = append(servers, login.Server{Pod: pod.Name, Host: pod.Status.PodIP})
		}
	}
	if len(servers) == 0 {
		checker.Forget(key)
		return nil, nil
	}
	c, err := p.secretCredentials(ctx)
	if err != nil {
		return nil, err
	}
	verdict := checker.Check(login.Target{Database: key, Engine: string(db.Spec.Engine), Port: p.plan.Engine.Runtime().Port, Servers: servers,
		Credentials: login.Credentials{User: c.cred.User, Password: c.cred.Password, Database: c.database, Authorities: c.cred.Authorities}})
	p.read.login = verdict.Generation
	if len(verdict.Refusals) == 0 {
		return nil, nil
	}
	refusing := make([]string, len(verdict.Refusals))
	for k, r := range verdict.Refusals {
		refusing[k] = r.Pod
	}
	which := "the server of pod " + refusing[0]
	if len(refusing) > 1 {
		which = "the servers of pods " + strings.Join(refusing, ", ")
	}
	subject := "Secret " + names.SecretName(db)
	return &status.Cause{Reason: status.ReasonCredentialsRejected, Subject: subject, Stuck: true, Message: fmt.Sprintf(
		"%s: %s refused its username and password (%s). Clients that log in with them are refused, and those that have the password the database holds are served. "+
			"If the password was changed in the database, write the new one to the Secret's keys password and uri: the controller logs in again as soon as the Secret changes, and every %s",
		subject, which, verdict.Refusals[0].Message, checker.Interval())}, nil
}

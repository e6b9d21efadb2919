package builder

import (
	"maps"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// NewSecret builds the credentials Secret. It is created once and never
// written again, so that users may rotate the password, but for the
// read-only keys an older Secret lacks (package reconcile adds them).
func NewSecret(db *dbv1alpha1.Database, e engine.Engine, password string) *corev1ac.SecretApplyConfiguration {
	rt := e.Runtime()
	host := names.Host(db)
	data := map[string][]byte{
		engine.SecretKeyUsername: []byte(rt.Username),
		engine.SecretKeyPassword: []byte(password),
		engine.SecretKeyDatabase: []byte(engine.DatabaseName(db.Name)),
		engine.SecretKeyHost:     []byte(host),
		engine.SecretKeyPort:     []byte(strconv.Itoa(int(rt.Port))),
		engine.SecretKeyURI:      []byte(clientURI(db, e, host, password)),
	}
	if rt.Replication != nil {
		// The read-only Service exists once the Database is replicated; the
		// keys are here from the start, as the Secret is never rewritten.
		maps.Copy(data, ReadOnlyKeys(db, e, password))
	}
	return corev1ac.Secret(names.SecretName(db), db.Namespace).
		WithLabels(names.Labels(db)).
		WithOwnerReferences(ownerReference(db)).
		WithType(corev1.SecretTypeOpaque).
		WithData(data)
}

// ReadOnlyKeys are the Secret's keys for the read-only Service of a
// replicated Database (ro-host, ro-uri), with password in the URI.
func ReadOnlyKeys(db *dbv1alpha1.Database, e engine.Engine, password string) map[string][]byte {
	host := names.ReadOnlyHost(db)
	return map[string][]byte{
		engine.SecretKeyReadOnlyHost: []byte(host),
		engine.SecretKeyReadOnlyURI:  []byte(clientURI(db, e, host, password)),
	}
}

// clientURI is the URI of the Database's database through host.
func clientURI(db *dbv1alpha1.Database, e engine.Engine, host, password string) string {
	rt := e.Runtime()
	uri := url.URL{
		Scheme: rt.URIScheme,
		User:   url.UserPassword(rt.Username, password),
		Host:   host + ":" + strconv.Itoa(int(rt.Port)),
		Path:   "/" + engine.DatabaseName(db.Name),
	}
	return uri.String() + rt.URIQuery
}

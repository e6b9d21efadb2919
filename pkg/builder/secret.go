package builder

import (
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/engine"
	"github.com/dbcontroller/database-controller/pkg/names"
)

// NewSecret builds the credentials Secret. It is created once and never
// written again, so that users may rotate the password.
func NewSecret(db *dbv1alpha1.Database, e engine.Engine, password string) *corev1ac.SecretApplyConfiguration {
	rt := e.Runtime()
	database := engine.DatabaseName(db.Name)
	host := names.Host(db)
	port := strconv.Itoa(int(rt.Port))
	uri := url.URL{
		Scheme: rt.URIScheme,
		User:   url.UserPassword(rt.Username, password),
		Host:   host + ":" + port,
		Path:   "/" + database,
	}
	data := map[string][]byte{
		engine.SecretKeyUsername: []byte(rt.Username),
		engine.SecretKeyPassword: []byte(password),
		engine.SecretKeyDatabase: []byte(database),
		engine.SecretKeyHost:     []byte(host),
		engine.SecretKeyPort:     []byte(port),
		engine.SecretKeyURI:      []byte(uri.String() + rt.URIQuery),
	}
	if rt.Replication != nil {
		// The read-only Service exists once the Database is replicated; the
		// keys are here from the start, as the Secret is never rewritten.
		ro := uri
		ro.Host = names.ReadOnlyHost(db) + ":" + port
		data[engine.SecretKeyReadOnlyHost] = []byte(names.ReadOnlyHost(db))
		data[engine.SecretKeyReadOnlyURI] = []byte(ro.String() + rt.URIQuery)
	}
	return corev1ac.Secret(names.SecretName(db), db.Namespace).
		WithLabels(names.Labels(db)).
		WithOwnerReferences(ownerReference(db)).
		WithType(corev1.SecretTypeOpaque).
		WithData(data)
}

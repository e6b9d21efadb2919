// Package names holds the names and labels of every object the controller
// owns. Each is derived from the Database alone, so that any package can
// find a child without building it.
package names

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/labels"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

// Labels shared by every object the controller owns.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of LabelManagedBy; the informers select on it.
	ManagedBy = "database-controller"
	// DataVolume is the name of the volumeClaimTemplate holding the data.
	DataVolume = "data"
)

// SecretName is the name of the credentials Secret.
func SecretName(db *dbv1alpha1.Database) string { return db.Name + "-credentials" }

// TLSSecretName names the Secret of the servers' certificate, its key and
// the authorities they are trusted through (tls.crt, tls.key, ca.crt).
func TLSSecretName(db *dbv1alpha1.Database) string { return db.Name + "-tls" }

// AuthoritySecretName names the Secret of the Database's certificate
// authority (ca.crt, ca.key), which no pod mounts.
func AuthoritySecretName(db *dbv1alpha1.Database) string { return db.Name + "-ca" }

// ClusterDomain is the cluster's DNS domain, in the longest names a server
// certificate covers.
const ClusterDomain = "cluster.local"

// HeadlessServiceName is the name of the Service that gives pods stable identities.
func HeadlessServiceName(db *dbv1alpha1.Database) string { return db.Name + "-headless" }

// ServiceName is the name of the client Service.
func ServiceName(db *dbv1alpha1.Database) string { return db.Name }

// ReadOnlyServiceName is the name of the read-only Service of a replicated
// Database, which routes to the replicas.
func ReadOnlyServiceName(db *dbv1alpha1.Database) string { return db.Name + "-ro" }

// ReadOnlyHost is the cluster DNS name of the read-only Service.
func ReadOnlyHost(db *dbv1alpha1.Database) string {
	return fmt.Sprintf("%s.%s.svc", ReadOnlyServiceName(db), db.Namespace)
}

// DisruptionBudgetName is the name of the PodDisruptionBudget over every
// pod of a replicated Database.
func DisruptionBudgetName(db *dbv1alpha1.Database) string { return db.Name }

// PrimaryDisruptionBudgetName is the name of the PodDisruptionBudget over
// the primary of a replicated Database.
func PrimaryDisruptionBudgetName(db *dbv1alpha1.Database) string { return db.Name + "-primary" }

// StatefulSetName is the name of the StatefulSet.
func StatefulSetName(db *dbv1alpha1.Database) string { return db.Name }

// PodName is the name of the StatefulSet's pod of ordinal.
func PodName(db *dbv1alpha1.Database, ordinal int) string {
	return StatefulSetName(db) + "-" + strconv.Itoa(ordinal)
}

// Ordinal is the ordinal of pod, a pod of db's StatefulSet, and false for
// a name that is not one.
func Ordinal(db *dbv1alpha1.Database, pod string) (int, bool) {
	prefix := StatefulSetName(db) + "-"
	if len(pod) <= len(prefix) || pod[:len(prefix)] != prefix {
		return 0, false
	}
	n, err := strconv.Atoi(pod[len(prefix):])
	if err != nil || n < 0 || strconv.Itoa(n) != pod[len(prefix):] {
		return 0, false
	}
	return n, true
}

// ClaimPrefix starts the name of every data volume claim that the
// StatefulSet controller makes from the claim template: the ordinal follows.
func ClaimPrefix(db *dbv1alpha1.Database) string {
	return DataVolume + "-" + StatefulSetName(db) + "-"
}

// Host is the cluster DNS name of the client Service.
func Host(db *dbv1alpha1.Database) string {
	return fmt.Sprintf("%s.%s.svc", ServiceName(db), db.Namespace)
}

// Endpoint is host:port of the client Service.
func Endpoint(db *dbv1alpha1.Database, port int32) string {
	return Host(db) + ":" + strconv.Itoa(int(port))
}

// Labels are the labels of every object owned by db.
func Labels(db *dbv1alpha1.Database) map[string]string {
	return map[string]string{
		LabelName:      string(db.Spec.Engine),
		LabelInstance:  db.Name,
		LabelManagedBy: ManagedBy,
	}
}

// SelectorLabels select the pods of db. Both labels are immutable in effect:
// the engine cannot change and neither can the name.
func SelectorLabels(db *dbv1alpha1.Database) map[string]string {
	return map[string]string{
		LabelName:     string(db.Spec.Engine),
		LabelInstance: db.Name,
	}
}

// RoleSelectorLabels select the pods of db that carry role
// (dbv1alpha1.RolePrimary or RoleReplica).
func RoleSelectorLabels(db *dbv1alpha1.Database, role string) map[string]string {
	l := SelectorLabels(db)
	l[dbv1alpha1.LabelRole] = role
	return l
}

// Selector is the pod selector of db as a string, for the scale subresource.
func Selector(db *dbv1alpha1.Database) string {
	return labels.SelectorFromSet(SelectorLabels(db)).String()
}

// ManagedSelector selects every object this controller manages, in every
// Database: the child informers list and watch only those.
func ManagedSelector() string {
	return labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy}).String()
}

package reconcile

import (
	"errors"

	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/dbcontroller/database-controller/pkg/backup"
	dbinformers "github.com/dbcontroller/database-controller/pkg/generated/informers/externalversions"
)

// NewCaches gives the informers of the controller's factories the indexes a
// pass reads through, and returns their caches, and whether each has
// synced. kube should be limited to the objects labelled as managed by
// this controller, and claimEvents to the events about claims; nodes, when
// not nil, watches the nodes, to see the primaries' nodes cordoned;
// configMaps, when not nil, the ConfigMaps labelled
// dbcontroller.io/parameters: "true"; tlsSecrets, when not nil, the
// Secrets labelled dbcontroller.io/tls: "true"; podMonitors, when not
// nil, the PodMonitors labelled as managed by this controller.
func NewCaches(kube kubeinformers.SharedInformerFactory, dbs dbinformers.SharedInformerFactory,
	claimEvents, nodes, configMaps, tlsSecrets kubeinformers.SharedInformerFactory, podMonitors cache.SharedIndexInformer) (Caches, []cache.InformerSynced, error) {
	if claimEvents == nil {
		return Caches{}, nil, errors.New("no informer factory for the events about claims")
	}
	var c Caches
	instance := cache.Indexers{IndexInstance: IndexByInstance}
	type source struct {
		informer cache.SharedIndexInformer
		indexers cache.Indexers
		into     *cache.Indexer
	}
	informers := []source{
		{kube.Apps().V1().StatefulSets().Informer(), nil, &c.StatefulSets},
		{kube.Core().V1().Services().Informer(), nil, &c.Services},
		{kube.Core().V1().Secrets().Informer(), nil, &c.Secrets},
		{kube.Batch().V1().Jobs().Informer(), instance, &c.Jobs},
		{dbs.Dbcontroller().V1alpha1().DatabaseBackups().Informer(), cache.Indexers{backup.IndexDatabase: backup.IndexByDatabase}, &c.Backups},
		{kube.Core().V1().PersistentVolumeClaims().Informer(), instance, &c.Claims},
		{kube.Core().V1().Pods().Informer(), cache.Indexers{IndexInstance: IndexByInstance, IndexNode: IndexByNode}, &c.Pods},
		{claimEvents.Core().V1().Events().Informer(), cache.Indexers{IndexClaim: IndexByClaim}, &c.ClaimEvents},
		{kube.Policy().V1().PodDisruptionBudgets().Informer(), nil, &c.Budgets},
	}
	if nodes != nil {
		informers = append(informers, source{nodes.Core().V1().Nodes().Informer(), nil, &c.Nodes})
	}
	if configMaps != nil {
		informers = append(informers, source{configMaps.Core().V1().ConfigMaps().Informer(), nil, &c.ConfigMaps})
	}
	if tlsSecrets != nil {
		informers = append(informers, source{tlsSecrets.Core().V1().Secrets().Informer(), nil, &c.TLSSecrets})
	}
	if podMonitors != nil {
		informers = append(informers, source{podMonitors, nil, &c.PodMonitors})
	}
	synced := make([]cache.InformerSynced, 0, len(informers))
	for _, inf := range informers {
		if inf.indexers != nil {
			if err := inf.informer.AddIndexers(inf.indexers); err != nil {
				return Caches{}, nil, err
			}
		}
		*inf.into = inf.informer.GetIndexer()
		synced = append(synced, inf.informer.HasSynced)
	}
	return c, synced, nil
}

// ByKind is each cache by the kind of object it holds, for the metric of
// what the controller caches: two caches hold Secrets (its children's and
// the users' TLS Secrets). A cache not made (nil) is left out.
func (c Caches) ByKind() map[string][]cache.Store {
	out := map[string][]cache.Store{}
	for _, s := range []struct {
		kind  string
		store cache.Indexer
	}{
		{"StatefulSet", c.StatefulSets}, {"Service", c.Services}, {"Secret", c.Secrets}, {"Job", c.Jobs},
		{"DatabaseBackup", c.Backups}, {"PersistentVolumeClaim", c.Claims}, {"Pod", c.Pods}, {"Event", c.ClaimEvents},
		{"PodDisruptionBudget", c.Budgets}, {"Node", c.Nodes}, {"ConfigMap", c.ConfigMaps}, {"Secret", c.TLSSecrets},
		{"PodMonitor", c.PodMonitors},
	} {
		if s.store != nil {
			out[s.kind] = append(out[s.kind], s.store)
		}
	}
	return out
}

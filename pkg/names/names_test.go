package names

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
)

func TestSelectorEndpointHost(t *testing.T) {
	tests := []struct {
		engine       dbv1alpha1.Engine
		name, ns     string
		wantSelector string
		wantHost     string
		wantEndpoint string
		port         int32
	}{
		{dbv1alpha1.EnginePostgreSQL, "orders", "default", "app.kubernetes.io/instance=orders,app.kubernetes.io/name=postgresql", "orders.default.svc", "orders.default.svc:5432", 5432},
		{dbv1alpha1.EngineMySQL, "shop-db", "prod", "app.kubernetes.io/instance=shop-db,app.kubernetes.io/name=mysql", "shop-db.prod.svc", "shop-db.prod.svc:3306", 3306},
		{dbv1alpha1.EngineMongoDB, "events", "analytics", "app.kubernetes.io/instance=events,app.kubernetes.io/name=mongodb", "events.analytics.svc", "events.analytics.svc:27017", 27017},
	}
	for _, tt := range tests {
		t.Run(string(tt.engine), func(t *testing.T) {
			db := &dbv1alpha1.Database{
				ObjectMeta: metav1.ObjectMeta{Name: tt.name, Namespace: tt.ns},
				Spec:       dbv1alpha1.DatabaseSpec{Engine: tt.engine},
			}
			if got := Selector(db); got != tt.wantSelector {
				t.Errorf("Selector() = %q, want %q", got, tt.wantSelector)
			}
			if got := Host(db); got != tt.wantHost {
				t.Errorf("Host() = %q, want %q", got, tt.wantHost)
			}
			if got := Endpoint(db, tt.port); got != tt.wantEndpoint {
				t.Errorf("Endpoint() = %q, want %q", got, tt.wantEndpoint)
			}
		})
	}
}

func TestNames(t *testing.T) {
	db := &dbv1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "default"}}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"SecretName", SecretName(db), "orders-credentials"},
		{"HeadlessServiceName", HeadlessServiceName(db), "orders-headless"},
		{"ServiceName", ServiceName(db), "orders"},
		{"StatefulSetName", StatefulSetName(db), "orders"},
		{"ClaimPrefix", ClaimPrefix(db), "data-orders-"},
		{"ManagedSelector", ManagedSelector(), "app.kubernetes.io/managed-by=database-controller"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s() = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

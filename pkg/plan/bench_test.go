package plan

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	dbv1alpha1 "github.com/dbcontroller/database-controller/pkg/apis/dbcontroller/v1alpha1"
	"github.com/dbcontroller/database-controller/pkg/builder"
	"github.com/dbcontroller/database-controller/pkg/drift"
)

// BenchmarkCompute is the plan of a new PostgreSQL Database: what every
// pass computes first, the digests stamped on each child included.
func BenchmarkCompute(b *testing.B) {
	db := database(dbv1alpha1.EnginePostgreSQL, "18", "")
	b.ReportAllocs()
	for b.Loop() {
		Compute(db, Observed{})
	}
}

// BenchmarkCompareStatefulSet is the comparison of a StatefulSet as its
// create returned it with the desired state it was created from: what a
// pass does after each create (noteCovered) and, for the other kinds, at
// each new resourceVersion of a child.
func BenchmarkCompareStatefulSet(b *testing.B) {
	desired := Compute(database(dbv1alpha1.EnginePostgreSQL, "18", ""), Observed{}).StatefulSet
	var created appsv1.StatefulSet
	if err := builder.Convert(desired, &created); err != nil {
		b.Fatal(err)
	}
	created.ResourceVersion, created.Generation = "7", 1
	if field, err := drift.FirstDifference(&created, desired); err != nil || field != "" {
		b.Fatalf("FirstDifference(as created) = %q, %v; want none", field, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		drift.FirstDifference(&created, desired)
	}
}

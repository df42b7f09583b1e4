// Package sections holds the runnable example of every pattern, shared by
// examples/<pattern>/main.go and examples/tour.
package sections

import "github.com/tablekit/tablekit/examples/internal/demo"

// All returns every section in the order the tour runs them.
func All() []demo.Section {
	return []demo.Section{
		SecondaryIndex(),
		IndexEntities(),
		Archive(),
		Tracing(),
		WideEntities(),
		LargeEntities(),
		DataSeries(),
		HighVolumeDelete(),
		ShardedStream(),
		Heterogeneous(),
		Denormalization(),
	}
}

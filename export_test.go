package tablekit

// Names the external test package's benchmarks share with the internal
// ones.
type Employee20 = employee20

var SampleEmployee20 = sampleEmployee20

// GovernorRate is the entities per second g now lets through to partition
// pk of table, for the external tests.
func GovernorRate(g *Governor, table, pk string) float64 { return g.rate(table, pk) }

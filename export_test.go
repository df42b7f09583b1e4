package tablekit

// Names the external test package's benchmarks share with the internal
// ones.
type Employee20 = employee20

var SampleEmployee20 = sampleEmployee20

// Package azuritehook lends package azurite's test-only settings to
// tablekit's other tests without exporting them, as internal/hook does for
// the root. Package azurite sets every variable here in its init; a
// parameter typed any is the azurite type its comment names.
package azuritehook

// SortCosmosWithinPartition makes the Cosmos mode of opts (a
// *azurite.FrontOptions) keep each partition's entities in RowKey order
// and shuffle only the partitions, as live Cosmos DB did in every
// recording (the replay tests compare the front with them). By default
// every entity is placed independently: the documentation promises no
// order at all.
var SortCosmosWithinPartition func(opts any)

// Package index implements the secondary index patterns of the Azure Table
// storage design guide: intra-partition secondary indexes kept consistent in
// one entity group transaction, inter-partition secondary indexes kept
// eventually consistent through a queue worker, and index entities for
// non-unique values.
package index

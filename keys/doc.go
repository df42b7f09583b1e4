// Package keys encodes PartitionKey and RowKey values whose string order is
// the order the application needs: compound keys, fixed-width numbers,
// inverted ticks for newest-first order, prefix ranges, shard buckets that
// avoid the prepend/append anti-pattern, and key validation. It does no I/O.
package keys

// Package logtail implements two time-ordered patterns of the Azure Table
// storage design guide: the log tail pattern (newest-first RowKeys, so the
// latest entries are one short range query away) and log data kept in blobs
// the way Storage Analytics does it, instead of the log data anti-pattern of
// one table entity per log record.
package logtail

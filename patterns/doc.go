// Package patterns implements the entity-shape patterns of the Azure Table
// storage design guide: wide entities, large entities (blob spill), data
// series, high-volume delete (a table per period), sharded streams against the
// prepend/append anti-pattern, and heterogeneous entity types in one table.
package patterns

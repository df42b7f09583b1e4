// Package tablekit is the typed core of the Azure Table storage design
// patterns: an [Account] opened from a connection string or a token
// credential, typed tables ([Table]) over Go structs with an exact EDM codec,
// OData filters escaped by construction ([Where]), entity group transactions
// and bulk writes, errors that work with [errors.Is] and [errors.As], and a
// [Meter] that counts the billable storage transactions each operation costs.
//
// The sub-packages build the patterns of Microsoft's "Azure Table storage
// table design guide" on this core: keys (key encoders), index (secondary
// indexes), archive (eventually consistent transactions), logtail (log tail
// and log data in blobs) and patterns (entity-shape patterns). Package azurite
// starts a real Azurite emulator for tests and examples.
package tablekit

// Package archive implements the eventually consistent transactions pattern
// of the Azure Table storage design guide: a queue message describes a change
// that spans partitions, tables or services, and a worker applies it with
// idempotent steps, deleting the message only when every step succeeded. It
// ships the guide's own example, archiving an employee from a Current table
// to an Archive table, with claim-check payloads and a poison queue.
package archive

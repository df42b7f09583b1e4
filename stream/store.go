package stream

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/keys"
)

// The rows of a stream, in its partition: every RowKey starts with the
// stream's prefix and then "~".
const (
	headInfix  = "~head~" // prefix~head~<version>: the stream's one head row
	eventInfix = "~ev~"   // prefix~ev~<version>: an event
	idInfix    = "~id~"   // prefix~id~<event id>: an event id, holding its version
	digits     = 10       // a version in a RowKey: 10 decimal digits, zero-padded
)

// maxVersion is the highest version a RowKey of 10 digits holds.
const maxVersion int64 = 9_999_999_999

// AnyVersion, as Append's expectedVersion, appends at the stream's end
// whatever its version: Append reads the version (1 query) and appends at
// it; when another append comes first, it appends at the version its
// conflict read, for up to Options.Retry's attempts. It is for a stream
// that writers add to without deciding on what it holds, a log such as the
// changes of a partition's Table writes (see package feed), where a
// version check would only make them retry. It costs 1 query + 1 EGT, and
// 1 refused EGT + 1 query per append that came first. A lost answer is
// settled as in any append, and a try is applied at most once (see the
// package doc); events with ids make a repeat by the caller a Replayed
// Result as well.
const AnyVersion int64 = -1

// Properties this package writes. Event rows carry propID and propAppend
// beside the event's own properties (which must not use these names);
// head and id rows carry propVersion.
const (
	propID      = "_id"     // string: the event's id, when it has one
	propAppend  = "_append" // string: a random stamp of the append, on its first event
	propVersion = "Version" // int64: head row, id row
)

// ID names a stream: a partition, and a RowKey prefix inside it, so that
// several streams can share a partition: Streamstone's virtual partitions.
// Every row of a stream has a RowKey that starts with Prefix + "~", and a
// prefix holds no "~", so streams with different prefixes (the empty one
// included) never share a row. An append writes one stream: its extra
// actions may write other rows of the partition, not another stream's.
type ID struct {
	// PartitionKey is the stream's partition ("" is refused).
	PartitionKey string
	// Prefix starts the RowKeys of the stream's rows; it must not contain
	// "~" (which ends it in every RowKey) nor any character a RowKey
	// cannot hold ('/', '\', '#', '?', control characters).
	Prefix string
}

// name returns "PartitionKey" or "PartitionKey/Prefix", quoted, for
// messages.
func (id ID) name() string {
	if id.Prefix == "" {
		return strconv.Quote(id.PartitionKey)
	}
	return strconv.Quote(id.PartitionKey + "/" + id.Prefix)
}

func (id ID) head(v int64) string       { return id.Prefix + headInfix + pad(v) }
func (id ID) event(v int64) string      { return id.Prefix + eventInfix + pad(v) }
func (id ID) eventID(eid string) string { return id.Prefix + idInfix + eid }

func pad(v int64) string {
	s := strconv.FormatInt(v, 10)
	if len(s) >= digits {
		return s
	}
	return strings.Repeat("0", digits-len(s)) + s
}

// versionOf parses the version at the end of a head or event RowKey.
func versionOf(rk, infix string) (int64, bool) {
	i := strings.LastIndex(rk, infix)
	if i < 0 || len(rk)-i-len(infix) != digits {
		return 0, false
	}
	v, err := strconv.ParseInt(rk[i+len(infix):], 10, 64)
	return v, err == nil && v >= 1
}

// validate checks id before anything is sent: a partition key and RowKeys
// the service takes (the head row's is the longest).
func (id ID) validate(op string) error {
	if id.PartitionKey == "" {
		return invalid(op, "ID.PartitionKey", "empty PartitionKey")
	}
	if strings.Contains(id.Prefix, "~") {
		return invalid(op, "ID.Prefix", fmt.Sprintf("prefix %q contains \"~\", which ends the prefix in the stream's RowKeys", id.Prefix))
	}
	if err := keys.Validate(id.PartitionKey); err != nil {
		return badKey(op, "ID.PartitionKey", keyLimit, fmt.Sprintf("partition key %q: %v", id.PartitionKey, err))
	}
	if err := keys.Validate(id.head(maxVersion)); err != nil {
		return badKey(op, "ID.Prefix", keyLimit, fmt.Sprintf("prefix %q starts the RowKeys of the stream's rows (%q): %v", id.Prefix, id.head(maxVersion), err))
	}
	return nil
}

// checkKeys checks the RowKeys of id's rows and of its id rows ids that
// the service would refuse (validate checked the rest), on Azure Cosmos DB
// for Table too.
func (s *Store) checkKeys(op string, id ID, ids []string) error {
	if s.t.Account().Service() == tablekit.ServiceCosmosDB && len(id.head(maxVersion)) > limits.CosmosRowKeyBytes {
		return badKey(op, "ID.Prefix", cosmosKeyLimit, fmt.Sprintf("prefix %q makes RowKeys of %d bytes (%q)", id.Prefix, len(id.head(maxVersion)), id.head(maxVersion)))
	}
	for i, eid := range ids {
		rk := id.eventID(eid)
		if err := keys.Validate(rk); err != nil {
			return badKey(op, "Event.ID", keyLimit, fmt.Sprintf("event %d's id %q is in the RowKey of its id row (%q): %v", i, eid, rk, err))
		}
		if s.t.Account().Service() == tablekit.ServiceCosmosDB && len(rk) > limits.CosmosRowKeyBytes {
			return badKey(op, "Event.ID", cosmosKeyLimit, fmt.Sprintf("event %d's id %q makes an id row's RowKey of %d bytes", i, eid, len(rk)))
		}
	}
	return nil
}

// Event is an event to append: Data is a value of a struct type
// registered in the Store's tablekit.Registry (tablekit.Register), which
// needs no key fields (if it has them, Append ignores them and reads fill
// them with the event row's keys), or a tablekit.Entity (whose keys are
// ignored too). ID, when not "", identifies the event: an append whose
// events carry ids is idempotent (see Store.Append). An id becomes part of
// a RowKey (Prefix + "~id~" + ID), so it obeys the RowKey rules and limits
// (no / \ # ? or control characters; 1 KiB, 255 bytes on Azure Cosmos DB
// for Table, with the prefix), which Append checks before sending.
type Event struct {
	// ID identifies the event in its stream, e.g. the id of the command or
	// message it comes from; "" for none. The events of one append carry
	// ids all, or none.
	ID string
	// Data is the event: a value of a registered type, stored with its
	// type value (tablekit.Registry.Encode) in the event's row.
	Data any
}

// RecordedEvent is an event as read from its stream.
type RecordedEvent struct {
	// Version is the event's version: its position in the stream, from 1.
	Version int64
	// ID is the event's id, "" when it was appended without one.
	ID string
	// Kind is the event's kind, as its row's type value names it
	// (tablekit.Registry.Kind: "Placed" for "Placed.v2"), "" when the row
	// has none (a tablekit.Entity appended without a type property).
	Kind string
	// Data is the event, decoded by the Store's Registry into the type
	// registered for its kind and version (a struct value), or a
	// tablekit.Entity when none is.
	Data any
	// Time is when the service stored the event (its row's Timestamp).
	Time time.Time
}

// Result is the outcome of an append.
type Result struct {
	// First and Last are the versions of the append's first and last
	// events; Last is the stream's version right after the append.
	First, Last int64
	// ETags holds the new ETag of each extra action, in order ("" for a
	// delete). It is nil when the outcome was settled by reading after a
	// lost answer, or replayed.
	ETags []azcore.ETag
	// Replayed says that the events' ids were recorded by an earlier
	// append (the same append repeated): nothing was written by this call,
	// the extra actions were not sent, and First and Last are the earlier
	// append's versions.
	Replayed bool
}

// Options configure a Store. The zero value (or nil) means the defaults.
type Options struct {
	// PageSize is how many versions one read request covers (1-1000,
	// default 100): Forward and Backward read a stream in bounded ranges
	// of versions, one query each, and order each range themselves.
	PageSize int
	// Retry paces the tries of an append whose answer was lost and that
	// reading showed was not applied, and the reads that settle a lost
	// answer; and Trim's tries. Default 30 attempts, 10 ms to 1 s apart.
	Retry tablekit.RetryPolicy
	// DropTrimmedIDs makes Trim delete the id rows of the events it drops
	// too, each in its event's transaction (50 events per transaction
	// instead of 100): a trimmed stream then keeps nothing per event. The
	// price is idempotency below the start: a repeat of an append whose
	// events were trimmed so is not recognised (at AnyVersion, or at the
	// current version, it is appended again). Leave it false (the id rows
	// stay, one small row per event with an id) unless repeats older than
	// the start cannot happen: ids of the events a Trim drops without it
	// stay for good.
	DropTrimmedIDs bool
}

// Store appends to and reads event streams in one table. Make one with
// NewStore; it is safe for concurrent use and keeps no state between
// calls, so any number of Stores, in any number of processes, may append
// to the same streams. The zero Store refuses every call with an error
// matching tablekit.ErrInvalidInput.
type Store struct {
	t   *tablekit.Table[tablekit.Entity]
	reg *tablekit.Registry
	o   Options
}

// NewStore returns a Store of the streams in t (a property-bag view:
// table.AsEntities() of the application's table keeps its client-side
// encryption), whose events are typed by reg. reg must read kinds from
// the type property (KindInRowKey false): an event's RowKey is its
// version. NewStore sends nothing.
func NewStore(t *tablekit.Table[tablekit.Entity], reg *tablekit.Registry, opts *Options) (*Store, error) {
	const op = "NewStore"
	var o Options
	if opts != nil {
		o = *opts
	}
	if t == nil || t.Name() == "" {
		return nil, invalid(op, "table", "nil table (use tablekit.OpenTable and Table.AsEntities)")
	}
	if reg == nil {
		return nil, invalid(op, "registry", "nil *tablekit.Registry")
	}
	if reg.KindInRowKey {
		return nil, invalid(op, "registry", "a Registry with KindInRowKey cannot type events: an event's RowKey is its version (use the type property)")
	}
	if o.PageSize < 0 || o.PageSize > limits.PageSize {
		return nil, invalid(op, "PageSize", fmt.Sprintf("%d: 1-%d, or 0 for the default", o.PageSize, limits.PageSize))
	}
	if o.PageSize == 0 {
		o.PageSize = 100
	}
	if err := timing.Policy(o.Retry).Validate("stream.NewStore"); err != nil {
		return nil, err
	}
	o.Retry = tablekit.RetryPolicy(timing.Policy(o.Retry).WithDefaults(timing.Policy(tablekit.RetryPolicy(timing.Conflict))))
	return &Store{t: t, reg: reg, o: o}, nil
}

// Table returns the table the Store's streams are in (the property-bag
// view NewStore was given), nil for the zero Store.
func (s *Store) Table() *tablekit.Table[tablekit.Entity] {
	if s == nil {
		return nil
	}
	return s.t
}

// usable refuses a Store NewStore did not make.
func (s *Store) usable(op string) error {
	if s == nil || s.t == nil || s.reg == nil {
		return invalid(op, "", "zero Store (use stream.NewStore)")
	}
	return nil
}

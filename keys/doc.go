// Package keys encodes PartitionKey and RowKey values whose string order is
// the order the application needs: compound keys, fixed-width numbers,
// inverted ticks for newest-first order, key ranges, sharded keys that
// avoid the prepend/append anti-pattern, and key validation. It is pure: no
// I/O, only the standard library.
//
// Azure Table storage keeps entities sorted by PartitionKey and then RowKey,
// compared as strings, and range queries ("RowKey ge 'a' and RowKey lt 'b'")
// are cheap. Every encoder here produces keys whose string order is the
// order of the values they encode, so that order and ranges survive the trip
// through the service.
//
// # Encoders
//
//   - Compound, Split, Builder: a tuple of components as one key
//     ("empid!000223"), order preserved, for any text in the components
//     ('/', '#', control characters and the separator are escaped). See
//     Separator for the format.
//   - TupleRange, ComponentPrefixRange, PrefixEnd: the bounds of range
//     queries (see Ranges below).
//   - Uint, UintN, Int: fixed-width numbers whose string order is numeric
//     order, negative numbers included. For the reverse order, encode
//     math.MaxUint64-v or ^v (see Uint and Int).
//   - InvertedTicks, Ticks, Time, DescendingKey: times in .NET ticks as the
//     design guide's log tail pattern writes them (newest first), ascending
//     ticks, readable UTC text, and a newest-first key unique within a tick.
//   - GUID: GUIDs in canonical text form.
//   - Shard, ShardedKey, ShardedKeys, ParseShardedKey: a stable hash bucket
//     and the key that stores a partition in it (see Sharded keys below).
//   - Validate, KeySize, Compare: what Azure refuses in a key, with the
//     position; a key's size as the service measures it; the service's
//     order.
//
// Each encoder has a decoder (ParseX, Split) that accepts exactly what the
// encoder produces, so one value has one key. Typed encodings use only
// digits, lower-case hexadecimal, '-', ':', '.', '_', 'T' and 'Z': they are
// valid keys, and inside compound keys only Time's '.' is escaped.
//
// Allocation: the string forms allocate their result. Builder is the
// allocation-free form of every encoder: it appends a compound key of
// string and typed components to a buffer of the caller's, and a key of one
// typed component is that encoding itself (Time's '.' aside). Split of a key
// of up to four components allocates nothing when its result does not
// outlive the calling function (unescaped components share memory with the
// key); Validate, KeySize, Compare, Shard and the numeric and time decoders
// never allocate.
//
// # Ranges
//
// Three calls give the bounds of a range of keys, and they differ in what
// "starts with" means:
//
//   - TupleRange(components...): the tuple and every tuple extending it by
//     whole components. TupleRange("a") takes ("a") and ("a", "b"), never
//     ("ab").
//   - ComponentPrefixRange(components, prefix): tuples extending
//     components by one more component that starts with prefix, as a
//     string. The prefix is encoded like a component.
//   - tablekit.RowKeyPrefix(pk, prefix): stored RowKeys that start with
//     prefix as raw strings (its bound is PrefixEnd(prefix)), knowing
//     nothing of components or escapes: for keys written by hand.
//
// For RowKeys "a", "a!b", "ab" (the compound keys of ("a"), ("a", "b") and
// ("ab")) and "a_b" (a hand-made key, or the 1-tuple ("a_b")), with {"a"}
// short for []string{"a"}:
//
//	call                             "a"   "a!b"  "ab"  "a_b"  RowKey ge   lt
//	TupleRange("a")                  yes   yes    no    no     "a"         `a"`
//	TupleRange("a", "b")             no    yes    no    no     "a!b"       `a!b"`
//	ComponentPrefixRange(nil, "a")   yes   yes    yes   yes    "a"         "b"
//	ComponentPrefixRange({"a"}, "")  no    yes    no    no     "a!"        `a"`
//	ComponentPrefixRange({"a"}, "b") no    yes    no    no     "a!b"       "a!c"
//	tablekit.RowKeyPrefix(pk, "a")   yes   yes    yes   yes    "a"         "b"
//
// ComponentPrefixRange(nil, p) and RowKeyPrefix(pk, p) agree only while p
// holds no escaped character: for p = "a." the first selects components
// starting with "a." (keys starting with "a.."), the second raw keys
// starting with "a.", which on compound keys also takes in ("a/x"), stored
// "a.|x"; for p = "a!" the first selects components starting with "a!",
// the second the tuples ("a", ...). On compound keys, use the first two.
//
// # Sharded keys
//
// The prepend/append anti-pattern: keys that grow (or shrink) with time
// send every insert to the same partition. Spreading one logical partition
// (a log, a stream) over n partitions by a stable hash bucket lifts that
// limit n-fold; reading it then fans out over the n partitions. The one
// layout for such keys here is the bucket first:
//
//	<bucket>!<key>     ShardedKey(3, 16, "clicks") == "03!clicks"
//
// with the bucket zero-padded to the width of n-1 and the logical key as it
// is (Shard chooses the bucket, ShardedKeys lists the n keys of a logical
// key, ParseShardedKey takes one apart). Why first: Azure stores a table in
// ranges of PartitionKeys, each served by one server, and splits and moves
// ranges by load. With the bucket last ("clicks!03") the n partitions of one
// logical key are neighbours in key order, one range that must be split
// before the load spreads; with it first they lie in n distant places,
// between the other keys of their bucket, as Azure's performance advice for
// blob names (which are range-partitioned the same way) puts a hash "as
// early as possible". When the logical keys themselves grow with time (one
// per day, say), bucket last puts all n hot partitions at the one end of the
// key space, bucket first gives n separate ends. What bucket first keeps: a
// range or prefix of logical keys inside a bucket is one contiguous range
// ("PartitionKey ge '03!2024-05' and PartitionKey lt '03!2024-06'"), so a
// range query over logical keys is n range queries, as a query for one
// logical key is n point queries; and when key is a compound key, the
// sharded key is one too, with the bucket as first component, so TupleRange
// and Split work on it. What it gives up: the n partitions of one logical
// key are not one contiguous PartitionKey range, so a scan of all of them is
// n queries, not one (it is n queries with either layout whenever results
// must merge in RowKey order).
//
// # Ordering
//
// Go compares strings byte by byte (code point order); Azure and Azurite
// compare UTF-16 code units. The two orders differ only between
// supplementary-plane characters (U+10000 and above) and U+E000–U+FFFF.
// The compound encoding preserves order in both (tuple order with the
// components compared in that order); PrefixEnd (and so
// ComponentPrefixRange) is exact in both for keys without
// supplementary-plane characters; see PrefixEnd for the remaining cases.
//
// # Errors
//
// Nothing panics on bad input. Errors match one of four sentinels with
// errors.Is: ErrKeyTooLong and ErrKeyCharacter (a key Azure would refuse:
// the error is a *KeyError giving the position, and the component of a
// compound key), ErrMalformed (a decoder's input is not an encoding of
// this package) and ErrInvalidArgument (a value that cannot be encoded,
// such as a time outside 0001..9999, or a parameter out of range).
package keys

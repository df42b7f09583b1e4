package keys_test

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tablekit/tablekit/keys"
)

func ExampleValidate() {
	fmt.Println(keys.Validate("email!jonesj@contoso.com"))
	err := keys.Validate("sales/2024")
	fmt.Println(err)
	var ke *keys.KeyError
	if errors.As(err, &ke) {
		fmt.Println(ke.Pos, string(ke.Char), errors.Is(err, keys.ErrKeyCharacter))
	}
	// Output:
	// <nil>
	// keys: reserved character '/' (U+002F) at byte 5 is not allowed in a key (refused: / \ # ? U+0000-U+001F U+007F-U+009F)
	// 5 / true
}

func ExamplePrefixEnd() {
	end, ok := keys.PrefixEnd("email_jones")
	fmt.Printf("RowKey ge 'email_jones' and RowKey lt '%s' (%v)\n", end, ok)
	end, _ = keys.PrefixEnd("v1.") // '/' is refused in keys, so the bound skips it
	fmt.Println(end)
	_, ok = keys.PrefixEnd("")
	fmt.Println(ok)
	// Output:
	// RowKey ge 'email_jones' and RowKey lt 'email_jonet' (true)
	// v10
	// false
}

func ExampleCompound() {
	k, _ := keys.Compound("empid", "000223")
	fmt.Println(k)
	k, _ = keys.Compound("email", "jonesj@contoso.com")
	fmt.Println(k)
	// Paths, URLs and hashtags: characters Azure refuses are escaped.
	k, _ = keys.Compound("docs/readme.md", "#golang", "what?")
	fmt.Println(k)
	// Space, '!' and '"' are escaped too, so order holds.
	k, _ = keys.Compound(`say "hi"!`, "")
	fmt.Println(k)
	_, err := keys.Compound("bytes", "\xff")
	fmt.Println(err)
	// Output:
	// empid!000223
	// email!jonesj@contoso..com
	// docs.|readme..md!"|golang!what>|
	// say"_"qhi"q"e!
	// keys: component 1: invalid UTF-8 at byte 0 of a 1-byte component
}

func ExampleSplit() {
	parts, _ := keys.Split(`say"_"qhi"q"e!`)
	fmt.Printf("%q\n", parts)
	parts, _ = keys.Split("docs.|readme..md!\"|golang")
	fmt.Printf("%q\n", parts)
	// Output:
	// ["say \"hi\"!" ""]
	// ["docs/readme.md" "#golang"]
}

func ExampleTupleRange() {
	// Every key of a tuple that starts with ("Sales", "000223").
	lo, hi, _ := keys.TupleRange("Sales", "000223")
	fmt.Printf("RowKey ge '%s' and RowKey lt '%s'\n", lo, hi)
	// Output:
	// RowKey ge 'Sales!000223' and RowKey lt 'Sales!000223"'
}

func ExampleComponentPrefixRange() {
	// Index entities ("email", address): every address starting with "jones".
	lo, hi, _ := keys.ComponentPrefixRange([]string{"email"}, "jones")
	fmt.Printf("RowKey ge '%s' and RowKey lt '%s'\n", lo, hi)
	// Files ("path", name): every name under "docs/".
	lo, hi, _ = keys.ComponentPrefixRange([]string{"path"}, "docs/")
	fmt.Printf("RowKey ge '%s' and RowKey lt '%s'\n", lo, hi)
	// Output:
	// RowKey ge 'email!jones' and RowKey lt 'email!jonet'
	// RowKey ge 'path!docs.|' and RowKey lt 'path!docs.}'
}

// The table of the package doc (Ranges): which of four RowKeys each range
// takes in. tablekit.RowKeyPrefix(pk, p) is the range [p, PrefixEnd(p)).
func Example_ranges() {
	rowKeys := []string{"a", "a!b", "ab", "a_b"}
	show := func(name, lo, hi string) {
		fmt.Printf("%-33s", name)
		for _, k := range rowKeys {
			in := k >= lo && (hi == "" || k < hi)
			fmt.Printf(" %-5s", map[bool]string{true: "yes", false: "no"}[in])
		}
		fmt.Printf(" %q %q\n", lo, hi)
	}
	lo, hi, _ := keys.TupleRange("a")
	show(`TupleRange("a")`, lo, hi)
	lo, hi, _ = keys.TupleRange("a", "b")
	show(`TupleRange("a", "b")`, lo, hi)
	lo, hi, _ = keys.ComponentPrefixRange(nil, "a")
	show(`ComponentPrefixRange(nil, "a")`, lo, hi)
	lo, hi, _ = keys.ComponentPrefixRange([]string{"a"}, "")
	show(`ComponentPrefixRange({"a"}, "")`, lo, hi)
	lo, hi, _ = keys.ComponentPrefixRange([]string{"a"}, "b")
	show(`ComponentPrefixRange({"a"}, "b")`, lo, hi)
	end, _ := keys.PrefixEnd("a")
	show(`tablekit.RowKeyPrefix(pk, "a")`, "a", end)
	// Output:
	// TupleRange("a")                   yes   yes   no    no    "a" "a\""
	// TupleRange("a", "b")              no    yes   no    no    "a!b" "a!b\""
	// ComponentPrefixRange(nil, "a")    yes   yes   yes   yes   "a" "b"
	// ComponentPrefixRange({"a"}, "")   no    yes   no    no    "a!" "a\""
	// ComponentPrefixRange({"a"}, "b")  no    yes   no    no    "a!b" "a!c"
	// tablekit.RowKeyPrefix(pk, "a")    yes   yes   yes   yes   "a" "b"
}

func ExampleBuilder() {
	t := time.Date(2024, 5, 1, 12, 34, 56, 789123400, time.UTC)
	var b keys.Builder
	k, err := b.Add("order").AddUint(42).AddInvertedTicks(t).Key()
	fmt.Println(k, err)
	b.Reset(nil)
	k, err = b.Add("page").AddTime(t).Key() // Time's '.' is escaped: ".."
	fmt.Println(k, err)

	// Without allocating: append to a buffer that is reused.
	buf := make([]byte, 0, 128)
	for _, id := range []uint64{123, 124} {
		b.Reset(buf[:0])
		if buf, err = b.AddUintN(id, 6).AddUintN(2012, 4).Bytes(); err != nil {
			panic(err)
		}
		fmt.Println(string(buf)) // or use buf as it is
	}
	// Output:
	// order!00000000000000000042!2516877339032108765 <nil>
	// page!2024-05-01T12:34:56..7891234Z <nil>
	// 000123!2012
	// 000124!2012
}

func ExampleUint() {
	fmt.Println(keys.Uint(223))
	v, _ := keys.ParseUint("00000000000000000223")
	fmt.Println(v)
	// Descending order: encode and decode the complement.
	desc := keys.Uint(math.MaxUint64 - 223)
	v, _ = keys.ParseUint(desc)
	fmt.Println(desc, math.MaxUint64-v)
	// Output:
	// 00000000000000000223
	// 223
	// 18446744073709551392 223
}

func ExampleUintN() {
	k, _ := keys.UintN(223, 6)
	fmt.Println(k)
	_, err := keys.UintN(1000000, 6)
	fmt.Println(errors.Is(err, keys.ErrInvalidArgument))
	// Output:
	// 000223
	// true
}

func ExampleInt() {
	// Ascending, and descending (^v, decoded with ^ParseInt).
	for _, v := range []int64{-42, -1, 0, 42} {
		fmt.Println(keys.Int(v), keys.Int(^v))
	}
	// Output:
	// -9999999999999999958 00000000000000000041
	// -9999999999999999999 00000000000000000000
	// 00000000000000000000 -9999999999999999999
	// 00000000000000000042 -9999999999999999957
}

func ExampleInvertedTicks() {
	for _, t := range []time.Time{
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(0, 0),
		time.Date(2024, 5, 1, 12, 34, 56, 789123400, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC),
	} {
		k, _ := keys.InvertedTicks(t)
		back, _ := keys.ParseInvertedTicks(k)
		fmt.Println(k, back.Format(time.RFC3339Nano))
	}
	// Output:
	// 3155378975999999999 0001-01-01T00:00:00Z
	// 2534023007999999999 1970-01-01T00:00:00Z
	// 2516877339032108765 2024-05-01T12:34:56.7891234Z
	// 0000000000000000000 9999-12-31T23:59:59.9999999Z
}

func ExampleTicks() {
	k, _ := keys.Ticks(time.Unix(0, 0))
	fmt.Println(k)
	// Output:
	// 0621355968000000000
}

func ExampleTime() {
	k, _ := keys.Time(time.Date(2024, 5, 1, 12, 34, 56, 789123400, time.FixedZone("PDT", -7*3600)))
	fmt.Println(k)
	// Output:
	// 2024-05-01T19:34:56.7891234Z
}

func ExampleDescendingKey() {
	t := time.Date(2024, 5, 1, 12, 34, 56, 789123400, time.UTC)
	for seq := range uint64(3) {
		k, _ := keys.DescendingKey(t, seq)
		fmt.Println(k)
	}
	// Output:
	// 2516877339032108765_18446744073709551615
	// 2516877339032108765_18446744073709551614
	// 2516877339032108765_18446744073709551613
}

func ExampleGUID() {
	g := [16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	fmt.Println(keys.GUID(g))
	back, _ := keys.ParseGUID("12345678-9abc-def0-0123-456789abcdef")
	fmt.Println(back == g)
	// Output:
	// 12345678-9abc-def0-0123-456789abcdef
	// true
}

func ExampleShardedKey() {
	// Spread an append-only stream over 16 partitions: the PartitionKey of
	// an event is "<bucket>!clicks", the bucket chosen by the event's ID.
	bucket, _ := keys.Shard("event-42", 16)
	pk, _ := keys.ShardedKey(bucket, 16, "clicks")
	fmt.Println(pk)
	b, name, _ := keys.ParseShardedKey(pk, 16)
	fmt.Println(b, name)
	// A query over the whole stream fans out over all buckets.
	all, _ := keys.ShardedKeys(16, "clicks")
	fmt.Println(len(all), all[0], all[15])
	// Output:
	// 12!clicks
	// 12 clicks
	// 16 00!clicks 15!clicks
}

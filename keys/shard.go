package keys

// Shard buckets against the prepend/append anti-pattern: keys that grow
// (or shrink) monotonically, such as timestamps, send every insert to the
// same partition range. Storing a logical partition under ShardedKey, the
// bucket first ("<bucket>!<key>", see the package doc, Sharded keys), with
// the bucket computed by Shard from a stable hash of some identifier,
// spreads the writes over n partitions; a query over all of them fans out
// to the n keys ShardedKeys lists.
//
// The hash is 32-bit FNV-1a of the UTF-8 bytes of the key (offset basis
// 2166136261, prime 16777619), and the bucket is that hash modulo n. It will
// not change: changing it would move existing data. In a sharded key the
// bucket is written in decimal, zero-padded to the width of n-1 (n = 16
// gives "00".."15", n = 10 gives "0".."9"), so string order is bucket
// order.

// MaxShards is the largest bucket count Shard and ShardedKey accept.
const MaxShards = 10000

// Shard returns the bucket of key among n buckets (0..n-1): FNV-1a 32-bit of
// the key's bytes, modulo n. n must be 1..MaxShards (ErrInvalidArgument).
// It does not allocate.
func Shard(key string, n int) (int, error) {
	if err := checkShards(n); err != nil {
		return 0, err
	}
	return int(fnv1a(key) % uint32(n)), nil
}

// ShardedKey returns the key under which key is stored in bucket among n
// buckets: the bucket first, zero-padded to the width of n-1, then
// Separator, then key as it is, "<bucket>!<key>": ShardedKey(3, 16,
// "clicks") is "03!clicks". Choose the bucket with Shard, from whatever
// spreads the writes (an event ID, a RowKey), and query all of key with
// ShardedKeys. key is any valid key (see Validate), the empty key
// included; when key is a compound key, so is the result, with the bucket
// as its first component. See the package doc, Sharded keys, for why the
// bucket comes first.
//
// n outside 1..MaxShards or bucket outside 0..n-1 gives ErrInvalidArgument,
// a key holding a character Azure refuses a *KeyError (ErrKeyCharacter)
// whose Pos is in key, and a result over MaxKeyLen a *KeyError
// (ErrKeyTooLong).
func ShardedKey(bucket, n int, key string) (string, error) {
	if err := checkShards(n); err != nil {
		return "", err
	}
	if bucket < 0 || bucket >= n {
		return "", wrapf(ErrInvalidArgument, "bucket %d outside 0..%d", bucket, n-1)
	}
	if err := checkChars(key, len(key)); err != nil {
		return "", err
	}
	w := shardWidth(n)
	if size := 2*(w+1) + KeySize(key); size > MaxKeyLen {
		return "", tooLong(size)
	}
	var buf [128]byte
	b := appendDigits(buf[:0], uint64(bucket), w)
	return string(append(append(b, Separator), key...)), nil
}

// ParseShardedKey decodes ShardedKey: it returns the bucket and the key of
// s, a sharded key among n buckets. It accepts exactly the strings
// ShardedKey produces; anything else gives an error matching ErrMalformed,
// ErrKeyCharacter or ErrKeyTooLong (or ErrInvalidArgument for a bad n).
func ParseShardedKey(s string, n int) (bucket int, key string, err error) {
	if err := checkShards(n); err != nil {
		return 0, "", err
	}
	if err := Validate(s); err != nil {
		return 0, "", err
	}
	w := shardWidth(n)
	if len(s) <= w || s[w] != Separator {
		return 0, "", malformed("sharded key", s, "want the bucket in "+digitsText(w)+" and '!'")
	}
	v, ok := parseDigits(s[:w], w)
	if !ok || v >= uint64(n) {
		return 0, "", malformed("sharded key", s, "bucket not in 0..n-1 as "+digitsText(w))
	}
	return int(v), s[w+1:], nil
}

// ShardedKeys returns the n keys that together hold key, in bucket order:
// ShardedKey(b, n, key) for b = 0..n-1, the partitions a query over all of
// key fans out to; ShardedKeys(n, key)[Shard(id, n)] is the partition of
// id. Errors are those of ShardedKey.
func ShardedKeys(n int, key string) ([]string, error) {
	if err := checkShards(n); err != nil {
		return nil, err
	}
	out := make([]string, n)
	for b := range out {
		k, err := ShardedKey(b, n, key)
		if err != nil {
			return nil, err
		}
		out[b] = k
	}
	return out, nil
}

// shardWidth returns the number of digits of a bucket among n buckets:
// the width of n-1 in decimal (1 for n <= 10, 2 for n <= 100, ...).
func shardWidth(n int) int {
	w := 1
	for v := n - 1; v >= 10; v /= 10 {
		w++
	}
	return w
}

func checkShards(n int) error {
	if n < 1 || n > MaxShards {
		return wrapf(ErrInvalidArgument, "shard count %d outside 1..%d", n, MaxShards)
	}
	return nil
}

func digitsText(w int) string {
	if w == 1 {
		return "1 digit"
	}
	return string(rune('0'+w)) + " digits"
}

// fnv1a is the 32-bit FNV-1a hash of s.
func fnv1a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

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
// not change: changing it would move existing data. The bucket prefix is the
// bucket number in decimal, zero-padded to the width of n-1 (n = 16 gives
// "00".."15", n = 10 gives "0".."9"), so string order is bucket order.

// MaxShards is the largest bucket count Shard accepts.
const MaxShards = 10000

// Shard returns the bucket of key among n buckets (0..n-1): FNV-1a 32-bit of
// the key's bytes, modulo n. n must be 1..MaxShards (ErrInvalidArgument).
func Shard(key string, n int) (int, error) {
	if err := checkShards(n); err != nil {
		return 0, err
	}
	return int(fnv1a(key) % uint32(n)), nil
}

// ShardPrefix returns the fixed-width bucket prefix of key among n buckets:
// the decimal bucket number zero-padded to ShardWidth(n) digits, e.g. "07",
// the first part of a ShardedKey.
func ShardPrefix(key string, n int) (string, error) {
	var b [4]byte
	out, err := AppendShardPrefix(b[:0], key, n)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// AppendShardPrefix appends ShardPrefix(key, n) to dst. On error, dst is
// returned unchanged.
func AppendShardPrefix(dst []byte, key string, n int) ([]byte, error) {
	b, err := Shard(key, n)
	if err != nil {
		return dst, err
	}
	return appendDigits(dst, uint64(b), shardWidth(n)), nil
}

// ShardPrefixes lists the n bucket prefixes in order: ShardPrefixes(3) is
// ["0", "1", "2"]. ShardedKeys gives the whole keys of a fan-out query.
func ShardPrefixes(n int) ([]string, error) {
	if err := checkShards(n); err != nil {
		return nil, err
	}
	w := shardWidth(n)
	out := make([]string, n)
	buf := make([]byte, 0, n*w)
	for i := range out {
		start := len(buf)
		buf = appendDigits(buf, uint64(i), w)
		out[i] = string(buf[start:])
	}
	return out, nil
}

// ShardWidth returns the number of digits of a bucket prefix among n
// buckets: the width of n-1 in decimal (1 for n <= 10, 2 for n <= 100, ...).
// It returns 0 for n outside 1..MaxShards.
func ShardWidth(n int) int {
	if checkShards(n) != nil {
		return 0
	}
	return shardWidth(n)
}

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

// fnv1a is the 32-bit FNV-1a hash of s.
func fnv1a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

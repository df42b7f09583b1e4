package keys

// ShardedKey returns the key under which key is stored in bucket among n
// buckets: the bucket first, then Separator, then key as it is,
// "<bucket>!<key>" — ShardedKey(3, 16, "clicks") is "03!clicks". The bucket
// is written as ShardPrefix writes it (ShardWidth(n) digits); choose it with
// Shard, from whatever spreads the writes (an event ID, a RowKey), and
// query all of key with ShardedKeys. key is any valid key (see Validate),
// the empty key included; when key is a compound key, so is the result,
// with the bucket as its first component. See the package doc, Sharded
// keys, for why the bucket comes first.
//
// n outside 1..MaxShards or bucket outside 0..n-1 gives ErrInvalidArgument,
// a key holding a character Azure refuses a *KeyError (ErrKeyCharacter)
// whose Pos is in key, and a result over MaxKeyLen a *KeyError
// (ErrKeyTooLong).
func ShardedKey(bucket, n int, key string) (string, error) {
	var buf [128]byte
	b, err := AppendShardedKey(buf[:0], bucket, n, key)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// AppendShardedKey appends ShardedKey(bucket, n, key) to dst. On error, dst
// is returned unchanged.
func AppendShardedKey(dst []byte, bucket, n int, key string) ([]byte, error) {
	if err := checkShards(n); err != nil {
		return dst, err
	}
	if bucket < 0 || bucket >= n {
		return dst, wrapf(ErrInvalidArgument, "bucket %d outside 0..%d", bucket, n-1)
	}
	if err := checkChars(key, len(key)); err != nil {
		return dst, err
	}
	w := shardWidth(n)
	if size := 2*(w+1) + KeySize(key); size > MaxKeyLen {
		return dst, &KeyError{Pos: -1, Reason: reasonTooLong, Len: size, Err: ErrKeyTooLong}
	}
	dst = appendDigits(dst, uint64(bucket), w)
	return append(append(dst, Separator), key...), nil
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
// key fans out to. Errors are those of ShardedKey.
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

func digitsText(w int) string {
	if w == 1 {
		return "1 digit"
	}
	return string(rune('0'+w)) + " digits"
}

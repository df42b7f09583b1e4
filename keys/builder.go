package keys

import (
	"slices"
	"time"
)

// Builder builds a compound key (see Compound) from string and typed
// components without allocating once its buffer is large enough. Each
// typed component is written as Add would write its string form (AddUint(v)
// is Add(Uint(v)), AddTime(t) is Add(Time(t)), ...), so Split returns the
// string forms and a key mixing typed and string components keeps tuple
// order: a typed component compares like the value it encodes. Only Time
// holds a character that is escaped (its '.', written ".."); the other
// typed encodings are written as they are.
//
// The zero Builder is ready to use. The first error stops the building:
// later Add calls do nothing and Bytes/Key return it.
//
//	var b keys.Builder
//	b.Reset(buf[:0])
//	k, err := b.Add("order").AddUint(42).AddInvertedTicks(t).Bytes()
type Builder struct {
	buf   []byte
	start int // where the key starts in buf
	n     int // components added
	err   error
}

// Reset starts a new key that is appended to buf (buf[:0] reuses its
// storage).
func (b *Builder) Reset(buf []byte) {
	*b = Builder{buf: buf, start: len(buf)}
}

// Len returns the number of components added.
func (b *Builder) Len() int { return b.n }

// Err returns the first error, if any.
func (b *Builder) Err() error { return b.err }

// Bytes returns the buffer given to Reset with the key appended, or the
// first error. With no components it gives ErrInvalidArgument; over
// MaxKeyLen (see KeySize), a *KeyError matching ErrKeyTooLong.
func (b *Builder) Bytes() ([]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.n == 0 {
		return nil, errNoComponents
	}
	if n := KeySize(b.buf[b.start:]); n > MaxKeyLen {
		return nil, &KeyError{Pos: -1, Reason: reasonTooLong, Len: n, Err: ErrKeyTooLong}
	}
	return b.buf, nil
}

// Key returns the key as a string, or the first error.
func (b *Builder) Key() (string, error) {
	out, err := b.Bytes()
	if err != nil {
		return "", err
	}
	return string(out[b.start:]), nil
}

// sep starts a component: it reports false if an error stopped the build.
func (b *Builder) sep() bool {
	if b.err != nil {
		return false
	}
	if b.n > 0 {
		b.buf = append(b.buf, Separator)
	}
	b.n++
	return true
}

// Add adds a string component, escaped as in Compound.
func (b *Builder) Add(component string) *Builder {
	if b.sep() {
		var err error
		if b.buf, err = appendComponent(b.buf, component, b.n-1); err != nil {
			b.err = err
		}
	}
	return b
}

// AddUint adds Uint(v).
func (b *Builder) AddUint(v uint64) *Builder {
	if b.sep() {
		b.buf = AppendUint(b.buf, v)
	}
	return b
}

// AddUintN adds UintN(v, width).
func (b *Builder) AddUintN(v uint64, width int) *Builder {
	if b.sep() {
		b.buf, b.err = AppendUintN(b.buf, v, width)
	}
	return b
}

// AddInvertedUint adds InvertedUint(v).
func (b *Builder) AddInvertedUint(v uint64) *Builder {
	if b.sep() {
		b.buf = AppendInvertedUint(b.buf, v)
	}
	return b
}

// AddInt adds Int(v).
func (b *Builder) AddInt(v int64) *Builder {
	if b.sep() {
		b.buf = AppendInt(b.buf, v)
	}
	return b
}

// AddInvertedInt adds InvertedInt(v).
func (b *Builder) AddInvertedInt(v int64) *Builder {
	if b.sep() {
		b.buf = AppendInvertedInt(b.buf, v)
	}
	return b
}

// AddTime adds Time(t), its '.' escaped as Add does: "..".
func (b *Builder) AddTime(t time.Time) *Builder {
	if b.sep() {
		p := len(b.buf)
		if b.buf, b.err = AppendTime(b.buf, t); b.err == nil {
			b.buf = slices.Insert(b.buf, p+timeDot, '.')
		}
	}
	return b
}

// timeDot is the offset of the '.' in Time.
const timeDot = len("2006-01-02T15:04:05")

// AddTicks adds Ticks(t).
func (b *Builder) AddTicks(t time.Time) *Builder {
	if b.sep() {
		b.buf, b.err = AppendTicks(b.buf, t)
	}
	return b
}

// AddInvertedTicks adds InvertedTicks(t).
func (b *Builder) AddInvertedTicks(t time.Time) *Builder {
	if b.sep() {
		b.buf, b.err = AppendInvertedTicks(b.buf, t)
	}
	return b
}

// AddDescendingKey adds DescendingKey(t, seq).
func (b *Builder) AddDescendingKey(t time.Time, seq uint64) *Builder {
	if b.sep() {
		b.buf, b.err = AppendDescendingKey(b.buf, t, seq)
	}
	return b
}

// AddGUID adds GUID(g).
func (b *Builder) AddGUID(g [16]byte) *Builder {
	if b.sep() {
		b.buf = AppendGUID(b.buf, g)
	}
	return b
}

// AddInvertedGUID adds InvertedGUID(g).
func (b *Builder) AddInvertedGUID(g [16]byte) *Builder {
	if b.sep() {
		b.buf = AppendInvertedGUID(b.buf, g)
	}
	return b
}

package keys

import (
	"slices"
	"time"
)

// Builder builds a compound key (see Compound) from string and typed
// components, appending to a buffer of the caller's: once the buffer is
// large enough, it does not allocate. It is the allocation-free form of
// every encoder: a typed component is written as Add would write its
// string form (AddUint(v) is Add(Uint(v)), AddTime(t) is Add(Time(t)),
// ...), so Split returns the string forms, a key mixing typed and string
// components keeps tuple order, and a key of one typed component is that
// encoding itself, except for Time, whose '.' is escaped as "..".
//
// The zero Builder is ready to use. The first error stops the building:
// later Add calls do nothing and Bytes and Key return it.
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
	if err := tooLongKey(b.buf[b.start:]); err != nil {
		return nil, err
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

// AddUint adds Uint(v); AddUint(math.MaxUint64-v) adds the descending form.
func (b *Builder) AddUint(v uint64) *Builder {
	if b.sep() {
		b.buf = appendDigits(b.buf, v, uintWidth)
	}
	return b
}

// AddUintN adds UintN(v, width).
func (b *Builder) AddUintN(v uint64, width int) *Builder {
	if b.sep() {
		b.buf, b.err = appendUintN(b.buf, v, width)
	}
	return b
}

// AddInt adds Int(v); AddInt(^v) adds the descending form.
func (b *Builder) AddInt(v int64) *Builder {
	if b.sep() {
		b.buf = appendInt(b.buf, v)
	}
	return b
}

// AddTime adds Time(t), its '.' escaped as Add does: "..".
func (b *Builder) AddTime(t time.Time) *Builder {
	if b.sep() {
		p := len(b.buf)
		if b.buf, b.err = appendTime(b.buf, t); b.err == nil {
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
		b.buf, b.err = appendTicks(b.buf, t, false)
	}
	return b
}

// AddInvertedTicks adds InvertedTicks(t).
func (b *Builder) AddInvertedTicks(t time.Time) *Builder {
	if b.sep() {
		b.buf, b.err = appendTicks(b.buf, t, true)
	}
	return b
}

// AddGUID adds GUID(g).
func (b *Builder) AddGUID(g [16]byte) *Builder {
	if b.sep() {
		b.buf = appendGUID(b.buf, g)
	}
	return b
}

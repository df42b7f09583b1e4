package keys

import (
	"time"
)

// .NET ticks: 100 ns intervals since 0001-01-01T00:00:00 UTC, the unit of
// .NET's DateTime.Ticks. The design guide's log tail pattern writes
// newest-first RowKeys as
//
//	string.Format("{0:D19}", DateTime.MaxValue.Ticks - DateTime.UtcNow.Ticks)
//
// and InvertedTicks produces exactly that string, so Go and .NET writers can
// share a table. All the time encoders work in UTC with 100 ns precision
// (finer digits are truncated, as .NET does) and accept times from
// 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.9999999Z; others give an
// error matching ErrOutOfRange.
const (
	// MaxTicks is .NET's DateTime.MaxValue.Ticks (9999-12-31T23:59:59.9999999).
	MaxTicks int64 = 3155378975999999999
	// UnixEpochTicks is the .NET ticks of 1970-01-01T00:00:00Z.
	UnixEpochTicks int64 = 621355968000000000

	// TicksWidth is the width of Ticks and InvertedTicks ({0:D19}).
	TicksWidth = 19
	// TimeWidth is the width of Time.
	TimeWidth = len("2006-01-02T15:04:05.0000000Z")
	// DescendingKeyWidth is the width of DescendingKey.
	DescendingKeyWidth = TicksWidth + 1 + UintWidth

	unixToTicksSec int64 = UnixEpochTicks / 1e7 // 62135596800
	minUnixSec           = -unixToTicksSec
	maxUnixSec           = MaxTicks/1e7 - unixToTicksSec // 253402300799
)

// TimeToTicks returns the .NET ticks of t (DateTime.Ticks of the UTC time),
// truncated to 100 ns.
func TimeToTicks(t time.Time) (int64, error) {
	sec := t.Unix()
	if sec < minUnixSec || sec > maxUnixSec {
		return 0, wrapf(ErrOutOfRange, "time %s outside 0001-01-01..9999-12-31 UTC", t.UTC().Format(time.RFC3339Nano))
	}
	return (sec+unixToTicksSec)*1e7 + int64(t.Nanosecond()/100), nil
}

// TicksToTime returns the UTC time of .NET ticks (0..MaxTicks).
func TicksToTime(ticks int64) (time.Time, error) {
	if ticks < 0 || ticks > MaxTicks {
		return time.Time{}, wrapf(ErrOutOfRange, "ticks %d outside 0..%d", ticks, MaxTicks)
	}
	return time.Unix(ticks/1e7-unixToTicksSec, ticks%1e7*100).UTC(), nil
}

// Ticks encodes t as its .NET ticks in 19 zero-padded digits
// ({0:D19} of DateTime.Ticks): ascending order. The Unix epoch is
// "0621355968000000000".
func Ticks(t time.Time) (string, error) {
	return tickString(AppendTicks, t)
}

// tickString returns what appendTicks appends for t, as a string.
func tickString(appendTicks func([]byte, time.Time) ([]byte, error), t time.Time) (string, error) {
	var b [TicksWidth]byte
	out, err := appendTicks(b[:0], t)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// AppendTicks appends Ticks(t) to dst. On error, dst is returned unchanged.
func AppendTicks(dst []byte, t time.Time) ([]byte, error) {
	ticks, err := TimeToTicks(t)
	if err != nil {
		return dst, err
	}
	return appendDigits(dst, uint64(ticks), TicksWidth), nil
}

// ParseTicks decodes Ticks.
func ParseTicks(s string) (time.Time, error) {
	v, ok := parseDigits(s, TicksWidth)
	if !ok || v > uint64(MaxTicks) {
		return time.Time{}, malformed("Ticks", s, "want 19 digits not above 3155378975999999999")
	}
	return TicksToTime(int64(v))
}

// InvertedTicks encodes t as the guide's .NET code does,
// string.Format("{0:D19}", DateTime.MaxValue.Ticks - t.Ticks), so that
// later times sort first: 0001-01-01 is "3155378975999999999",
// 9999-12-31T23:59:59.9999999 is "0000000000000000000".
func InvertedTicks(t time.Time) (string, error) {
	return tickString(AppendInvertedTicks, t)
}

// AppendInvertedTicks appends InvertedTicks(t) to dst. On error, dst is
// returned unchanged.
func AppendInvertedTicks(dst []byte, t time.Time) ([]byte, error) {
	ticks, err := TimeToTicks(t)
	if err != nil {
		return dst, err
	}
	return appendDigits(dst, uint64(MaxTicks-ticks), TicksWidth), nil
}

// ParseInvertedTicks decodes InvertedTicks to a UTC time.
func ParseInvertedTicks(s string) (time.Time, error) {
	v, ok := parseDigits(s, TicksWidth)
	if !ok || v > uint64(MaxTicks) {
		return time.Time{}, malformed("InvertedTicks", s, "want 19 digits not above 3155378975999999999")
	}
	return TicksToTime(MaxTicks - int64(v))
}

// DescendingKey is a newest-first key that stays unique when many entries
// share a tick: InvertedTicks(t), '_', then InvertedUint(seq), 40 characters
// in all. Later times sort first; among equal ticks, a larger seq sorts
// first, so a per-writer counter that grows keeps newest-first order. With a
// random seq (say, from crypto/rand) the order among entries of one tick is
// arbitrary but fixed, and collisions need two writers to draw the same 64
// bits in the same 100 ns.
func DescendingKey(t time.Time, seq uint64) (string, error) {
	var b [DescendingKeyWidth]byte
	out, err := AppendDescendingKey(b[:0], t, seq)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// AppendDescendingKey appends DescendingKey(t, seq) to dst. On error, dst
// is returned unchanged.
func AppendDescendingKey(dst []byte, t time.Time, seq uint64) ([]byte, error) {
	dst, err := AppendInvertedTicks(dst, t)
	if err != nil {
		return dst, err
	}
	return AppendInvertedUint(append(dst, '_'), seq), nil
}

// ParseDescendingKey decodes DescendingKey.
func ParseDescendingKey(s string) (time.Time, uint64, error) {
	if len(s) != DescendingKeyWidth || s[TicksWidth] != '_' {
		return time.Time{}, 0, malformed("DescendingKey", s, "want 19 digits, '_' and 20 digits")
	}
	t, err := ParseInvertedTicks(s[:TicksWidth])
	if err != nil {
		return time.Time{}, 0, err
	}
	seq, err := ParseInvertedUint(s[TicksWidth+1:])
	if err != nil {
		return time.Time{}, 0, err
	}
	return t, seq, nil
}

// Time encodes t as readable, fixed-width UTC text with 100 ns precision,
// "2006-01-02T15:04:05.0000000Z" (.NET's round-trip "o" format for UTC):
// ascending order. For descending order use InvertedTicks.
func Time(t time.Time) (string, error) {
	var b [TimeWidth]byte
	out, err := AppendTime(b[:0], t)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// AppendTime appends Time(t) to dst. On error, dst is returned unchanged.
func AppendTime(dst []byte, t time.Time) ([]byte, error) {
	if _, err := TimeToTicks(t); err != nil {
		return dst, err
	}
	u := t.UTC()
	y, mo, d := u.Date()
	h, mi, s := u.Clock()
	dst = appendDigits(dst, uint64(y), 4)
	dst = appendDigits(append(dst, '-'), uint64(mo), 2)
	dst = appendDigits(append(dst, '-'), uint64(d), 2)
	dst = appendDigits(append(dst, 'T'), uint64(h), 2)
	dst = appendDigits(append(dst, ':'), uint64(mi), 2)
	dst = appendDigits(append(dst, ':'), uint64(s), 2)
	dst = appendDigits(append(dst, '.'), uint64(u.Nanosecond()/100), 7)
	return append(dst, 'Z'), nil
}

// ParseTime decodes Time to a UTC time. It accepts exactly the strings Time
// produces.
func ParseTime(s string) (time.Time, error) {
	bad := func() (time.Time, error) {
		return time.Time{}, malformed("Time", s, "want YYYY-MM-DDTHH:MM:SS.fffffffZ, a valid UTC time from year 0001")
	}
	if len(s) != TimeWidth || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
		s[16] != ':' || s[19] != '.' || s[27] != 'Z' {
		return bad()
	}
	var f [7]uint64
	for i, sp := range [7][2]int{{0, 4}, {5, 2}, {8, 2}, {11, 2}, {14, 2}, {17, 2}, {20, 7}} {
		v, ok := parseDigits(s[sp[0]:sp[0]+sp[1]], sp[1])
		if !ok {
			return bad()
		}
		f[i] = v
	}
	if f[0] < 1 || f[1] < 1 || f[1] > 12 || f[2] < 1 || f[3] > 23 || f[4] > 59 || f[5] > 59 {
		return bad()
	}
	t := time.Date(int(f[0]), time.Month(f[1]), int(f[2]), int(f[3]), int(f[4]), int(f[5]), int(f[6])*100, time.UTC)
	if t.Day() != int(f[2]) { // 2023-02-30 and the like
		return bad()
	}
	return t, nil
}

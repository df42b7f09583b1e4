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
// share a table; Ticks is .NET's DateTime.UtcNow.Ticks.ToString("D19"). All
// the time encoders work in UTC with 100 ns precision (finer digits are
// truncated, as .NET does) and accept times from 0001-01-01T00:00:00Z to
// 9999-12-31T23:59:59.9999999Z; others give an error matching
// ErrInvalidArgument.
const (
	// maxTicks is .NET's DateTime.MaxValue.Ticks (9999-12-31T23:59:59.9999999).
	maxTicks int64 = 3155378975999999999
	// unixEpochTicks is the .NET ticks of 1970-01-01T00:00:00Z.
	unixEpochTicks int64 = 621355968000000000

	ticksWidth         = 19 // {0:D19}
	timeWidth          = len("2006-01-02T15:04:05.0000000Z")
	descendingKeyWidth = ticksWidth + 1 + uintWidth

	unixToTicksSec int64 = unixEpochTicks / 1e7 // 62135596800
	minUnixSec           = -unixToTicksSec
	maxUnixSec           = maxTicks/1e7 - unixToTicksSec // 253402300799
)

// timeToTicks returns the .NET ticks of t (DateTime.Ticks of the UTC time),
// truncated to 100 ns.
func timeToTicks(t time.Time) (int64, error) {
	sec := t.Unix()
	if sec < minUnixSec || sec > maxUnixSec {
		return 0, wrapf(ErrInvalidArgument, "time %s outside 0001-01-01..9999-12-31 UTC", t.UTC().Format(time.RFC3339Nano))
	}
	return (sec+unixToTicksSec)*1e7 + int64(t.Nanosecond()/100), nil
}

// ticksToTime returns the UTC time of .NET ticks (0..maxTicks).
func ticksToTime(ticks int64) time.Time {
	return time.Unix(ticks/1e7-unixToTicksSec, ticks%1e7*100).UTC()
}

// Ticks encodes t as its .NET ticks in 19 zero-padded digits
// ({0:D19} of DateTime.Ticks): ascending order. The Unix epoch is
// "0621355968000000000".
func Ticks(t time.Time) (string, error) {
	return ticksString(t, false)
}

// ParseTicks decodes Ticks to a UTC time.
func ParseTicks(s string) (time.Time, error) {
	return parseTicks("Ticks", s, false)
}

// InvertedTicks encodes t as the guide's .NET code does,
// string.Format("{0:D19}", DateTime.MaxValue.Ticks - t.Ticks), so that
// later times sort first: 0001-01-01 is "3155378975999999999",
// 9999-12-31T23:59:59.9999999 is "0000000000000000000".
func InvertedTicks(t time.Time) (string, error) {
	return ticksString(t, true)
}

// ParseInvertedTicks decodes InvertedTicks to a UTC time.
func ParseInvertedTicks(s string) (time.Time, error) {
	return parseTicks("InvertedTicks", s, true)
}

func ticksString(t time.Time, inverted bool) (string, error) {
	var b [ticksWidth]byte
	out, err := appendTicks(b[:0], t, inverted)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// appendTicks appends Ticks(t), or InvertedTicks(t), to dst. On error, dst
// is returned unchanged.
func appendTicks(dst []byte, t time.Time, inverted bool) ([]byte, error) {
	ticks, err := timeToTicks(t)
	if err != nil {
		return dst, err
	}
	if inverted {
		ticks = maxTicks - ticks
	}
	return appendDigits(dst, uint64(ticks), ticksWidth), nil
}

func parseTicks(name, s string, inverted bool) (time.Time, error) {
	v, ok := parseDigits(s, ticksWidth)
	if !ok || v > uint64(maxTicks) {
		return time.Time{}, malformed(name, s, "want 19 digits not above 3155378975999999999")
	}
	ticks := int64(v)
	if inverted {
		ticks = maxTicks - ticks
	}
	return ticksToTime(ticks), nil
}

// DescendingKey is a newest-first key that stays unique when many entries
// share a tick: InvertedTicks(t), '_', then Uint(math.MaxUint64-seq), 40
// characters in all. Later times sort first; among equal ticks, a larger
// seq sorts first, so a per-writer counter that grows keeps newest-first
// order. With a random seq (say, from crypto/rand) the order among entries
// of one tick is arbitrary but fixed, and collisions need two writers to
// draw the same 64 bits in the same 100 ns.
func DescendingKey(t time.Time, seq uint64) (string, error) {
	var b [descendingKeyWidth]byte
	out, err := appendTicks(b[:0], t, true)
	if err != nil {
		return "", err
	}
	return string(appendDigits(append(out, '_'), ^seq, uintWidth)), nil
}

// ParseDescendingKey decodes DescendingKey.
func ParseDescendingKey(s string) (time.Time, uint64, error) {
	if len(s) != descendingKeyWidth || s[ticksWidth] != '_' {
		return time.Time{}, 0, malformed("DescendingKey", s, "want 19 digits, '_' and 20 digits")
	}
	t, err := ParseInvertedTicks(s[:ticksWidth])
	if err != nil {
		return time.Time{}, 0, err
	}
	seq, err := ParseUint(s[ticksWidth+1:])
	if err != nil {
		return time.Time{}, 0, err
	}
	return t, ^seq, nil
}

// Time encodes t as readable, fixed-width UTC text with 100 ns precision,
// "2006-01-02T15:04:05.0000000Z" (.NET's round-trip "o" format for UTC):
// ascending order. For descending order use InvertedTicks.
func Time(t time.Time) (string, error) {
	var b [timeWidth]byte
	out, err := appendTime(b[:0], t)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// appendTime appends Time(t) to dst. On error, dst is returned unchanged.
func appendTime(dst []byte, t time.Time) ([]byte, error) {
	if _, err := timeToTicks(t); err != nil {
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
	if len(s) != timeWidth || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
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

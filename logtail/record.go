package logtail

import (
	"bytes"
	"fmt"
	"time"

	"github.com/tablekit/tablekit"
)

// Record is one log record of a blob log.
type Record struct {
	// Time is when the record happened. It is stored in UTC with
	// nanosecond precision and read back in UTC.
	Time time.Time
	// Message is the record's text: any string, including tabs, newlines,
	// backslashes and bytes that are not UTF-8.
	Message string
}

// timeLayout is the record time format (see AppendRecord).
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// timeWidth is the width of a record's time field.
const timeWidth = len(timeLayout)

// maxRecordBytes is the longest encoded record (line) a Writer accepts:
// 4 MiB.
const maxRecordBytes = 4 << 20

// checkTime refuses, for operation op, a time t (of property prop) that
// cannot be written: years 1 to 9999 UTC.
func checkTime(op, prop string, t time.Time) error {
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return &tablekit.ValidationError{Op: op, Property: prop, Limit: "years 0001..9999 UTC", Detail: fmt.Sprintf("time %v out of range", t), Err: tablekit.ErrInvalidInput}
	}
	return nil
}

func appendTime(dst []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(dst, timeLayout)
}

func formatTime(t time.Time) string { return string(appendTime(nil, t)) }

func parseTime(b []byte) (time.Time, error) {
	if len(b) != timeWidth || b[len(b)-1] != 'Z' {
		return time.Time{}, fmt.Errorf("malformed record time %q", b)
	}
	t, err := time.Parse(timeLayout, string(b))
	if err != nil {
		return time.Time{}, fmt.Errorf("malformed record time %q", b)
	}
	return t, nil
}

// AppendRecord appends r's line (with its newline) to dst in the record
// format, one record per line:
//
//	<time>\t<message>\n
//
// where <time> is the UTC time in the fixed-width form
// "2006-01-02T15:04:05.000000000Z" (RFC 3339 with exactly nine fractional
// digits, so that text order is time order) and <message> is the message
// with four bytes escaped by a backslash: '\\' as `\\`, newline as `\n`,
// carriage return as `\r` and tab as `\t`. Every other byte is written as
// is. So a line never holds a raw newline, its fields never hold a raw
// tab, and every message round-trips exactly through [ParseRecord].
// r.Time must be within years 1..9999: otherwise a
// *tablekit.ValidationError with Op "logtail.AppendRecord" (matching
// tablekit.ErrInvalidInput), and dst unchanged.
func AppendRecord(dst []byte, r Record) ([]byte, error) {
	return appendRecord("logtail.AppendRecord", dst, r)
}

func appendRecord(op string, dst []byte, r Record) ([]byte, error) {
	if err := checkTime(op, "Time", r.Time); err != nil {
		return dst, err
	}
	dst = appendTime(dst, r.Time)
	dst = append(dst, '\t')
	m := r.Message
	for len(m) > 0 {
		i := 0
		for i < len(m) && m[i] != '\\' && m[i] != '\n' && m[i] != '\r' && m[i] != '\t' {
			i++
		}
		dst = append(dst, m[:i]...)
		if i == len(m) {
			break
		}
		switch m[i] {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		}
		m = m[i+1:]
	}
	return append(dst, '\n'), nil
}

// ParseRecord decodes one line of the record format, with or without its
// trailing newline. A line that is not in the format is a
// *tablekit.DecodeError with Op "logtail.ParseRecord".
func ParseRecord(line []byte) (Record, error) {
	r, err := parseRecord(line)
	if err != nil {
		return Record{}, &tablekit.DecodeError{Op: "logtail.ParseRecord", Detail: err.Error()}
	}
	return r, nil
}

// parseRecord is ParseRecord with a plain error.
func parseRecord(line []byte) (Record, error) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	if len(line) < timeWidth+1 || line[timeWidth] != '\t' {
		return Record{}, fmt.Errorf("malformed record %q: want <time>\\t<message>", truncateForError(line))
	}
	t, err := parseTime(line[:timeWidth])
	if err != nil {
		return Record{}, err
	}
	msg := line[timeWidth+1:]
	if !bytes.ContainsAny(msg, "\\\t\n") {
		return Record{Time: t, Message: string(msg)}, nil
	}
	out := make([]byte, 0, len(msg))
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '\t' || c == '\n' {
			return Record{}, fmt.Errorf("malformed record %q: raw delimiter in message", truncateForError(line))
		}
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i == len(msg) {
			return Record{}, fmt.Errorf("malformed record %q: dangling escape", truncateForError(line))
		}
		switch msg[i] {
		case '\\':
			out = append(out, '\\')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		default:
			return Record{}, fmt.Errorf("malformed record %q: unknown escape \\%c", truncateForError(line), msg[i])
		}
	}
	return Record{Time: t, Message: string(out)}, nil
}

func truncateForError(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// parseRecords decodes a blob's content: records in line order.
func parseRecords(data []byte, fn func(Record) error) error {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return fmt.Errorf("truncated record at end of blob")
		}
		r, err := parseRecord(data[:i])
		if err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
		data = data[i+1:]
	}
	return nil
}

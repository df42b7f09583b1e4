package logtail

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tablekit/tablekit"
)

// Blob names follow Storage Analytics:
//
//	<source>/YYYY/MM/DD/hhmm/NNNNNN.log
//
// in UTC, where hhmm is the start of the period the blob's records fall in
// (see WriterOptions.Period) and NNNNNN is a sequence number, unique among
// the blobs of that source and period. All of an hour's blobs share the
// prefix "<source>/YYYY/MM/DD/hh", which is what a Reader lists.

// maxSeq is the largest sequence number of a blob name (six digits).
const maxSeq = 999999

// maxSourceLen keeps blob names well below the service's 1,024 characters.
const maxSourceLen = 512

// checkSource reports whether source can start a blob name: one or more
// segments separated by '/', each of letters, digits, '-', '_' and '.',
// with at least one character that is not a digit (so that no source's
// names can be mistaken for another's date folders), and not "." or "..".
func checkSource(op, source string) error {
	bad := func(why string) error {
		return &tablekit.ValidationError{Op: op, Property: "source", Detail: fmt.Sprintf("source %q: %s", source, why), Err: tablekit.ErrInvalidInput}
	}
	if source == "" {
		return bad("empty")
	}
	if len(source) > maxSourceLen {
		return bad(fmt.Sprintf("longer than %d bytes", maxSourceLen))
	}
	for _, seg := range strings.Split(source, "/") {
		if seg == "" {
			return bad("empty segment (leading, trailing or double '/')")
		}
		if seg == "." || seg == ".." {
			return bad("segment \".\" or \"..\"")
		}
		digits := true
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-', c == '_', c == '.':
				digits = false
			default:
				return bad(fmt.Sprintf("character %q not allowed (letters, digits, '-', '_', '.' and '/' are)", c))
			}
		}
		if digits {
			return bad("a segment made only of digits could be mistaken for a date folder")
		}
	}
	return nil
}

// blobName returns the name of blob seq of source for the period starting
// at start (which is rounded down to the minute, in UTC):
// blobName("web", 2024-05-06T15:04:00Z, 1) is "web/2024/05/06/1504/000001.log".
func blobName(source string, start time.Time, seq int) string {
	u := start.UTC()
	b := make([]byte, 0, len(source)+32)
	b = append(b, source...)
	b = u.AppendFormat(append(b, '/'), "2006/01/02/1504")
	b = append(b, '/')
	b = appendPadded(b, seq, 6)
	b = append(b, ".log"...)
	return string(b)
}

func appendPadded(b []byte, v, width int) []byte {
	s := strconv.Itoa(v)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// hourPrefix returns the prefix every blob of source for the hour of t
// starts with: "<source>/YYYY/MM/DD/hh".
func hourPrefix(source string, t time.Time) string {
	return source + "/" + t.UTC().Format("2006/01/02/15")
}

// parseBlobName decodes a name blobName made: the source, the start of the
// period (to the minute, UTC) and the sequence number; any other name is
// an error.
func parseBlobName(name string) (source string, start time.Time, seq int, err error) {
	bad := func() (string, time.Time, int, error) {
		return "", time.Time{}, 0, &tablekit.ValidationError{Op: "logtail.parseBlobName", Property: "name", Detail: fmt.Sprintf("%q is not a log blob name (<source>/YYYY/MM/DD/hhmm/NNNNNN.log)", name), Err: tablekit.ErrInvalidInput}
	}
	const tail = len("/2006/01/02/1504/000000.log")
	if len(name) <= tail {
		return bad()
	}
	source, rest := name[:len(name)-tail], name[len(name)-tail:]
	if checkSource("", source) != nil || !strings.HasSuffix(rest, ".log") || rest[0] != '/' || rest[16] != '/' {
		return bad()
	}
	t, perr := time.Parse("2006/01/02/1504", rest[1:16])
	if perr != nil || t.Format("2006/01/02/1504") != rest[1:16] {
		return bad()
	}
	digits := rest[17:23]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return bad()
		}
	}
	seq, _ = strconv.Atoi(digits)
	return source, t, seq, nil
}

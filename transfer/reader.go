package transfer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/tablekit/tablekit"
)

// maxLineBytes is the longest line a [Reader] accepts (an entity of 1 MiB
// with every byte escaped fits).
const maxLineBytes = 8 << 20

// ErrTruncated is returned by [Reader.Next] when the stream ends without the
// trailer line: the export was cut short (or is still being written). Every
// entity line before the end was returned.
var ErrTruncated = errors.New("transfer: export ends without its trailer line: it is incomplete")

// ErrCorrupt is returned for a stream that is not an export of this format:
// no header, an unsupported version, data after the trailer, or a trailer
// whose count disagrees with the lines read.
var ErrCorrupt = errors.New("transfer: not a valid tablekit export")

// EntityError is an entity that failed: a line of an export that could
// not be read ([Reader.Next], [Import]), or an entity that could not be
// written ([Import], [Copy]).
type EntityError struct {
	// Line is the entity's 1-based line number in the export; 0 for
	// [Copy].
	Line int
	// PartitionKey and RowKey are the entity's keys, when its line got
	// that far; else "".
	PartitionKey, RowKey string
	// Err says what is wrong.
	Err error
}

// Error names the line or entity and the problem.
func (e *EntityError) Error() string {
	switch {
	case e.Line == 0:
		return fmt.Sprintf("%q/%q: %v", e.PartitionKey, e.RowKey, e.Err)
	case e.PartitionKey != "" || e.RowKey != "":
		return fmt.Sprintf("line %d (%q/%q): %v", e.Line, e.PartitionKey, e.RowKey, e.Err)
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

// Unwrap returns the underlying error.
func (e *EntityError) Unwrap() error { return e.Err }

// Reader reads an export line by line. It is not safe for concurrent use.
type Reader struct {
	br      *bufio.Reader
	buf     []byte
	line    int
	header  Header
	trailer *trailer
	count   int64
	bytes   int64

	// skip, when above 1, makes Next pass over the lines up to that line
	// number (a resumed import has done them) without decoding them;
	// skipBytes, when not negative, is the stream's offset at the end of
	// that line, checked on the way.
	skip      int
	skipBytes int64
}

// skipThrough makes Next pass over every line up to line (1-based) without
// returning its entity, and check that line ends at byte offset end (when
// end >= 0): a resumed import skips what its checkpoint records as done.
func (r *Reader) skipThrough(line int, end int64) {
	r.skip, r.skipBytes = line, end
}

// errNotSameInput is returned when a resumed import's input does not
// match its checkpoint.
func (r *Reader) errNotSameInput(detail string) error {
	return fmt.Errorf("%w: the input is not the one the checkpoint was made for: %s", ErrCorruptCheckpoint, detail)
}

// NewReader reads and checks the header line of an export from r and
// returns a Reader positioned at the first entity line. An error matches
// [ErrCorrupt] when r does not start with a header of a supported version.
func NewReader(r io.Reader) (*Reader, error) {
	if r == nil {
		return nil, validation("transfer.NewReader", "nil io.Reader")
	}
	rd := &Reader{br: bufio.NewReaderSize(r, 256<<10)}
	line, err := rd.readLine()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: the stream is empty", ErrCorrupt)
	}
	if err != nil {
		return nil, err
	}
	kind, l, err := parseLine(line)
	if err != nil || kind != lineHeader {
		return nil, fmt.Errorf("%w: line 1 is not a header line ({\"tablekit\":\"export\",\"version\":%d,...})", ErrCorrupt, formatVersion)
	}
	if rd.header, err = l.header(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return rd, nil
}

// Header returns the export's header.
func (r *Reader) Header() Header {
	if r == nil {
		return Header{}
	}
	return r.header
}

// lineNo returns the number of the line read last (1 is the header).
func (r *Reader) lineNo() int { return r.line }

// offset returns the number of bytes read so far.
func (r *Reader) offset() int64 { return r.bytes }

// complete reports whether Next has read the trailer.
func (r *Reader) complete() bool { return r.trailer != nil }

// Next returns the next entity. At the end of a complete export it returns
// io.EOF; at the end of a stream without a trailer, [ErrTruncated]. A line
// that is not a valid entity gives a *[EntityError] and Next can be called
// again for the following line. Other errors (from the underlying reader,
// or matching [ErrCorrupt]) are final.
func (r *Reader) Next() (tablekit.Entity, error) {
	if r == nil || r.br == nil {
		return tablekit.Entity{}, validation("transfer.Reader.Next", "nil or zero *Reader (make one with transfer.NewReader)")
	}
	for {
		line, err := r.readLine()
		if (err == io.EOF || err == ErrTruncated) && r.line < r.skip {
			return tablekit.Entity{}, r.errNotSameInput(fmt.Sprintf("it ends at line %d, before line %d", r.line, r.skip))
		}
		if err == io.EOF {
			if r.trailer == nil {
				return tablekit.Entity{}, ErrTruncated
			}
			return tablekit.Entity{}, io.EOF
		}
		if err != nil {
			return tablekit.Entity{}, err
		}
		if r.trailer != nil {
			return tablekit.Entity{}, fmt.Errorf("%w: line %d follows the trailer", ErrCorrupt, r.line)
		}
		skipped := r.line <= r.skip
		if skipped && r.line == r.skip && r.skipBytes >= 0 && r.bytes != r.skipBytes {
			return tablekit.Entity{}, r.errNotSameInput(fmt.Sprintf("line %d ends at byte %d, not %d", r.line, r.bytes, r.skipBytes))
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if skipped && !bytes.Contains(line, []byte(`"tablekit"`)) {
			// Not a header or trailer: an entity line (or a bad one),
			// done by the run being resumed.
			r.count++
			continue
		}
		kind, l, err := parseLine(line)
		if err != nil {
			r.count++ // the trailer counts every line between header and trailer
			if skipped {
				continue
			}
			return tablekit.Entity{}, &EntityError{Line: r.line, Err: err}
		}
		switch kind {
		case lineHeader:
			return tablekit.Entity{}, fmt.Errorf("%w: line %d is a second header", ErrCorrupt, r.line)
		case lineTrailer:
			r.trailer = &trailer{Entities: *l.Entities}
			if r.trailer.Entities != r.count {
				return tablekit.Entity{}, fmt.Errorf("%w: the trailer counts %d entities but %d entity lines were read", ErrCorrupt, r.trailer.Entities, r.count)
			}
			continue
		}
		r.count++
		if skipped {
			continue
		}
		e, err := l.entity()
		if err != nil {
			return tablekit.Entity{}, &EntityError{Line: r.line, PartitionKey: e.PartitionKey, RowKey: e.RowKey, Err: err}
		}
		return e, nil
	}
}

// readLine returns the next line without its newline; the slice is valid
// until the next call.
func (r *Reader) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.buf = append(r.buf, chunk...)
		r.bytes += int64(len(chunk))
		if len(r.buf) > maxLineBytes {
			return nil, fmt.Errorf("%w: line %d is longer than %d bytes", ErrCorrupt, r.line+1, maxLineBytes)
		}
		switch err {
		case nil:
			r.line++
			return bytes.TrimSuffix(bytes.TrimSuffix(r.buf, []byte("\n")), []byte("\r")), nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(r.buf) == 0 {
				return nil, io.EOF
			}
			// A last line without its newline is incomplete: a cut-off
			// write. Report the stream as truncated rather than read half
			// a line.
			r.line++
			return nil, ErrTruncated
		default:
			return nil, err
		}
	}
}

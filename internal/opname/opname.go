// Package opname names the exported operation that failed in the errors
// tablekit's pattern packages pass on, so that every refusal says who
// refused (index and patterns use it).
package opname

import (
	"errors"

	"github.com/tablekit/tablekit"
)

// conversions are the root operations a pattern calls on its caller's
// behalf, whose names mean nothing to that caller.
var conversions = map[string]bool{"": true, "EncodeEntity": true, "Decode": true, "Table.ToEntity": true, "Table.FromEntity": true}

// Set names op, the exported operation that failed, in err's
// *tablekit.ValidationError or *tablekit.DecodeError when that names no
// operation yet, or only a conversion (EncodeEntity, Decode,
// Table.ToEntity, Table.FromEntity) made on the caller's behalf. tablekit
// makes these errors fresh for each call (it copies its cached ones), so
// naming the operation in them is safe. It returns err.
func Set(op string, err error) error {
	if err == nil {
		return nil
	}
	var ve *tablekit.ValidationError
	if errors.As(err, &ve) && conversions[ve.Op] {
		ve.Op = op
	}
	var de *tablekit.DecodeError
	if errors.As(err, &de) && conversions[de.Op] {
		de.Op = op
	}
	return err
}

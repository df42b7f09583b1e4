package main

import (
	"context"
	"fmt"

	"github.com/tablekit/tablekit"
)

// reseal rewrites every row of partition pk with an encrypted property not
// sealed under the current key, so that the old keys can leave the ring:
// rewriting a row seals all its encrypted properties under the current key,
// and its ETag guards against a concurrent writer (the update then fails
// with ErrPreconditionFailed: run it again). It returns each row's key ids
// before and after ("p001 SSN=2025-q1 Diagnosis=2025-q2") and how many rows
// it rewrote.
func reseal(ctx context.Context, patients *tablekit.Table[Patient], raw *tablekit.Table[tablekit.Entity], pk, current string) (before, after []string, n int, err error) {
	before, stale, err := keyIDs(ctx, raw, pk, current)
	if err != nil {
		return nil, nil, 0, err
	}
	for _, rk := range stale {
		p, err := patients.Get(ctx, pk, rk)
		if err != nil {
			return nil, nil, n, err
		}
		if _, err := patients.Update(ctx, p, p.ETag); err != nil {
			return nil, nil, n, err
		}
		n++
	}
	after, _, err = keyIDs(ctx, raw, pk, current)
	return before, after, n, err
}

// keyIDs reads a partition through a view without keys, only its encrypted
// properties, and returns each row's key ids ("p001 SSN=2025-q1
// Diagnosis=2025-q2") and the rows with a property not sealed under
// current. It decrypts nothing.
func keyIDs(ctx context.Context, raw *tablekit.Table[tablekit.Entity], pk, current string) (rows, stale []string, err error) {
	for e, err := range raw.Query(ctx, tablekit.PartitionEq(pk), &tablekit.QueryOptions{Select: encrypted, KeyOrder: true}) {
		if err != nil {
			return nil, nil, err
		}
		row, old := e.RowKey, false
		for _, p := range encrypted {
			ct, _ := e.Properties[p].([]byte)
			id, err := tablekit.CiphertextKeyID(ct)
			if err != nil {
				return nil, nil, fmt.Errorf("row %s, %s: %w", e.RowKey, p, err)
			}
			row, old = row+" "+p+"="+id, old || id != current
		}
		if rows = append(rows, row); old {
			stale = append(stale, e.RowKey)
		}
	}
	return rows, stale, nil
}

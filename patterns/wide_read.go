package patterns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/timing"
	"github.com/tablekit/tablekit/keys"
)

// This file reads a wide entity and checks that what it read is one
// version (see the package doc, Wide entities).

// widePart is one physical entity as read, without Wide's bookkeeping.
type widePart struct {
	index int
	etag  azcore.ETag
	ts    time.Time
	props map[string]any
	stamp string // wideStampProperty; "" when the part has none
	// manifest is wideManifestProperty of part 0, parsed; nil when absent.
	manifest map[int]string
}

// read returns the parts of a logical entity, in part order (one range
// query), and whether they are one version of it.
func (w *Wide[T]) read(ctx context.Context, pk, rk string) ([]*widePart, bool, error) {
	lo, hi, err := keys.TupleRange(rk)
	if err != nil {
		return nil, false, &tablekit.ValidationError{Entity: pk + "/" + rk, Property: "RowKey", Detail: err.Error(), Err: tablekit.ErrInvalidKey}
	}
	var parts []*widePart
	for e, err := range w.table.Query(ctx, tablekit.RowKeyRange(pk, lo, hi), nil) {
		if err != nil {
			return nil, false, err
		}
		comps, err := keys.Split(e.RowKey)
		var idx uint64
		if err == nil && len(comps) == 2 && comps[0] == rk {
			idx, err = keys.ParseUintN(comps[1], widePartWidth)
		}
		if err != nil || len(comps) != 2 || comps[0] != rk || idx >= maxWideParts {
			return nil, false, &tablekit.DecodeError{Entity: pk + "/" + e.RowKey, Detail: fmt.Sprintf("not a part of the wide entity %q (want RowKey %q plus a part number)", rk, lo)}
		}
		p, err := newWidePart(pk, int(idx), e)
		if err != nil {
			return nil, false, err
		}
		parts = append(parts, p)
	}
	slices.SortFunc(parts, func(a, b *widePart) int { return a.index - b.index })
	return parts, oneVersion(parts), nil
}

// newWidePart takes Wide's bookkeeping out of a physical entity.
func newWidePart(pk string, idx int, e tablekit.Entity) (*widePart, error) {
	p := &widePart{index: idx, etag: e.ETag, ts: e.Timestamp, props: e.Properties}
	if p.props == nil {
		p.props = make(map[string]any)
	}
	bad := func(name string) error {
		return &tablekit.DecodeError{Entity: pk + "/" + e.RowKey, Property: name, Detail: "not bookkeeping written by patterns.Wide"}
	}
	if v, ok := p.props[wideStampProperty]; ok {
		s, isStr := v.(string)
		if !isStr {
			return nil, bad(wideStampProperty)
		}
		p.stamp = s
		delete(p.props, wideStampProperty)
	}
	if v, ok := p.props[wideManifestProperty]; ok {
		s, isStr := v.(string)
		m, err := parseManifest(s)
		if !isStr || err != nil || idx != 0 {
			return nil, bad(wideManifestProperty)
		}
		p.manifest = m
		delete(p.props, wideManifestProperty)
	}
	return p, nil
}

// oneVersion reports whether parts (sorted) are one version of a logical
// entity: none at all, or part 0 and exactly the parts its manifest lists,
// each with the stamp listed. Parts without any bookkeeping (written
// before the protocol) are taken as one version; they cannot be checked.
func oneVersion(parts []*widePart) bool {
	if len(parts) == 0 {
		return true
	}
	if parts[0].index != 0 {
		return false // part 0 always exists: it was read before it was written
	}
	if parts[0].stamp == "" {
		for _, p := range parts {
			if p.stamp != "" || p.manifest != nil {
				return false
			}
		}
		return true // written before the protocol
	}
	m := parts[0].manifest
	if len(m) != len(parts)-1 {
		return false
	}
	for _, p := range parts[1:] {
		if stamp, ok := m[p.index]; !ok || stamp != p.stamp {
			return false
		}
	}
	return true
}

// parseManifest parses "1:stamp 2:stamp ...".
func parseManifest(s string) (map[int]string, error) {
	m := map[int]string{}
	for _, f := range strings.Fields(s) {
		i, stamp, ok := strings.Cut(f, ":")
		n, err := strconv.Atoi(i)
		if !ok || err != nil || n <= 0 || n >= maxWideParts || stamp == "" {
			return nil, fmt.Errorf("bad manifest entry %q", f)
		}
		m[n] = stamp
	}
	return m, nil
}

// formatManifest writes a manifest in part order.
func formatManifest(m map[int]string) string {
	var b strings.Builder
	for _, i := range slices.Sorted(maps.Keys(m)) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(':')
		b.WriteString(m[i])
	}
	return b.String()
}

// wideStampLen is the length of a write id.
const wideStampLen = 16

// newStamp returns a random write id.
func newStamp() string {
	var b [wideStampLen / 2]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// readVersion reads until the parts are one version, at most as often as
// the Retry policy says.
func (w *Wide[T]) readVersion(ctx context.Context, pk, rk string) ([]*widePart, error) {
	for range timing.Policy(w.retry).Attempts(ctx) {
		parts, ok, err := w.read(ctx, pk, rk)
		if err != nil || ok {
			return parts, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, w.unsettled(pk, rk)
}

// unsettled is the error of a read that never saw one version.
func (w *Wide[T]) unsettled(pk, rk string) error {
	return fmt.Errorf("wide entity %s/%s changed during each of %d reads: %w", pk, rk, w.retry.MaxAttempts, tablekit.ErrPreconditionFailed)
}

// assemble joins parts into one property map and the latest Timestamp.
func assemble(parts []*widePart) (map[string]any, time.Time) {
	props := make(map[string]any)
	var ts time.Time
	for _, p := range parts {
		maps.Copy(props, p.props)
		if p.ts.After(ts) {
			ts = p.ts
		}
	}
	return props, ts
}

// Get reads the logical entity with one range query and reassembles it,
// with its version (part 0's ETag) in T's etag field when T has one. It
// returns an error matching tablekit.ErrNotFound when there is none. When
// the query came back straddling a concurrent write, Get reads again (see
// the Table's TableOptions.Retry); if it never sees one version it fails with an error
// matching tablekit.ErrPreconditionFailed.
func (w *Wide[T]) Get(ctx context.Context, pk, rk string) (T, error) {
	const op = "patterns.Wide.Get"
	var zero T
	if err := w.usable(op); err != nil {
		return zero, err
	}
	parts, err := w.readVersion(ctx, pk, rk)
	if err != nil {
		return zero, withOp(op, err)
	}
	if len(parts) == 0 {
		return zero, withOp(op, notFound("wide entity", pk, rk))
	}
	props, ts := assemble(parts)
	v, err := w.decode(pk, rk, ts, parts[0].etag, props)
	return v, withOp(op, err)
}

// notFound is the error of a missing logical entity.
func notFound(what, pk, rk string) error {
	return fmt.Errorf("%s %s/%s: %w", what, pk, rk, tablekit.ErrNotFound)
}

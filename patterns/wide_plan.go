package patterns

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/limits"
)

// wideSlot is one physical entity while a write is planned.
type wideSlot struct {
	index   int
	old     *widePart // nil for a new part
	props   map[string]any
	size    int             // Azure size of props
	removed bool            // a stored property leaves the part: rewrite it whole
	changed map[string]bool // properties to send in a merge
}

// dirty reports whether the part's properties change.
func (s *wideSlot) dirty() bool { return s.old == nil || s.removed || len(s.changed) > 0 }

// written reports whether a write that changes anything writes the part:
// part 0 always, a part without a stamp to give it one.
func (s *wideSlot) written() bool { return s.dirty() || s.index == 0 || s.old.stamp == "" }

// maxManifest is the longest manifest: every part but part 0, each as
// "NN:stamp ".
var maxManifest = strings.Repeat("x", (maxWideParts-1)*(wideStampLen+4))

// bookkeepingSize is the size, in Azure's formula, of Wide's properties in
// part index.
func bookkeepingSize(index int) int {
	n := propertySize(wideStampProperty, maxManifest[:wideStampLen])
	if index == 0 {
		n += propertySize(wideManifestProperty, maxManifest)
	}
	return n
}

// bookkeepingJSON bounds the request bytes of Wide's properties in part
// index.
func bookkeepingJSON(index int) int {
	n := jsonPropertySize(wideStampProperty, maxManifest[:wideStampLen])
	if index == 0 {
		n += jsonPropertySize(wideManifestProperty, maxManifest)
	}
	return n
}

// plan computes the transaction that turns the stored parts old (one
// version, or nil for a new entity) into a logical entity with exactly the
// properties want. Properties stay in the part that holds them unless it
// overflows; new and displaced properties go first to parts that are
// written anyway, then to other parts with room, then to new parts.
//
// Unless nothing changes (no actions), the transaction includes part 0:
// inserted for a new entity, else written conditional on the ETag read,
// with the write's new stamp and the manifest of the parts after it; this
// condition is what makes every write conditional on the version it read.
// Every part written carries the new stamp; parts that do not change are
// not written and keep theirs.
func (w *Wide[T]) plan(pk, rk string, old []*widePart, want map[string]any) ([]tablekit.Action[tablekit.Entity], error) {
	desc := pk + "/" + rk
	for _, name := range []string{wideStampProperty, wideManifestProperty} {
		if _, ok := want[name]; ok {
			return nil, &tablekit.ValidationError{Entity: desc, Property: name, Detail: "the property name is reserved for patterns.Wide's bookkeeping", Err: tablekit.ErrInvalidInput}
		}
	}
	rk0, err := widePartKey(rk, 0)
	if err != nil {
		return nil, err
	}
	capOf := func(index int) int { return limits.EntityBytes - keysSize(pk, rk0) - bookkeepingSize(index) }
	capBytes := capOf(1) // the larger capacity, for single properties
	fits := func(s *wideSlot, name string, val any) bool {
		return len(s.props) < w.perPart && s.size+propertySize(name, val) <= capOf(s.index)
	}

	placed := make(map[string]bool, len(want))
	var slots []*wideSlot
	used := make(map[int]bool)
	for _, p := range old {
		s := &wideSlot{index: p.index, old: p, props: make(map[string]any, len(p.props)), changed: map[string]bool{}}
		used[p.index] = true
		for name, val := range p.props {
			nv, ok := want[name]
			if !ok || placed[name] {
				s.removed = true
				continue
			}
			placed[name] = true
			s.props[name] = nv
			s.size += propertySize(name, nv)
			if !valuesEqual(val, nv) {
				s.changed[name] = true
			}
		}
		// A grown value may overflow its part: move changed properties
		// (largest first) elsewhere until it fits.
		for len(s.props) > w.perPart || s.size > capOf(s.index) {
			victim, best := "", -1
			for name, val := range s.props {
				sz := propertySize(name, val)
				if s.changed[name] {
					sz += capBytes // prefer changed properties
				}
				if sz > best || sz == best && name < victim {
					victim, best = name, sz
				}
			}
			s.size -= propertySize(victim, s.props[victim])
			delete(s.props, victim)
			delete(s.changed, victim)
			delete(placed, victim)
			s.removed = true
		}
		slots = append(slots, s)
	}

	var homeless []string
	for name := range want {
		if !placed[name] {
			homeless = append(homeless, name)
		}
	}
	slices.Sort(homeless)
	next := 0
	for _, name := range homeless {
		val := want[name]
		if propertySize(name, val) > capBytes {
			return nil, &tablekit.ValidationError{Entity: desc, Property: name, Limit: "<= 1 MiB per physical entity", Size: propertySize(name, val), Detail: "a single property larger than an entity cannot be split; store it in a blob (patterns.Large)", Err: tablekit.ErrTooLarge}
		}
		var target *wideSlot
		for pass := 0; pass < 2 && target == nil; pass++ {
			for _, s := range slots {
				if (pass == 0) == s.written() && fits(s, name, val) {
					target = s
					break
				}
			}
		}
		if target == nil {
			for next < maxWideParts && used[next] {
				next++
			}
			if next >= maxWideParts {
				return nil, w.tooWide(desc, len(want), "more than 100 physical entities")
			}
			target = &wideSlot{index: next, props: map[string]any{}, changed: map[string]bool{}}
			used[next] = true
			slots = append(slots, target)
		}
		target.props[name] = val
		target.size += propertySize(name, val)
		target.changed[name] = true
	}
	if !used[0] {
		slots = append(slots, &wideSlot{index: 0, props: map[string]any{}, changed: map[string]bool{}})
	}
	slices.SortFunc(slots, func(a, b *wideSlot) int { return a.index - b.index })

	// The whole logical entity must fit in one transaction, so that any
	// later change of it can be written atomically.
	total := 0
	for _, s := range slots {
		if len(s.props) == 0 && s.index != 0 {
			continue
		}
		total += actionFraming + jsonEntityOverhead(pk, rk0) + bookkeepingJSON(s.index)
		for name, val := range s.props {
			total += jsonPropertySize(name, val)
		}
	}
	if total > transactionBudget {
		return nil, w.tooWide(desc, len(want), fmt.Sprintf("about %d bytes of requests, over the 4 MiB of one transaction", total))
	}

	changes := false
	stamp := newStamp()
	manifest := make(map[int]string, len(slots))
	for _, s := range slots {
		changes = changes || s.dirty()
		switch {
		case s.index == 0 || len(s.props) == 0:
			// part 0 is not listed; an empty part is deleted
		case s.written():
			manifest[s.index] = stamp
		default:
			manifest[s.index] = s.old.stamp
		}
	}
	if !changes {
		return nil, nil
	}
	var actions []tablekit.Action[tablekit.Entity]
	for _, s := range slots {
		prk, err := widePartKey(rk, s.index)
		if err != nil {
			return nil, err
		}
		e := tablekit.Entity{PartitionKey: pk, RowKey: prk}
		props := func(names map[string]bool) map[string]any {
			out := make(map[string]any, len(names)+2)
			for name := range names {
				out[name] = s.props[name]
			}
			out[wideStampProperty] = stamp
			if s.index == 0 {
				out[wideManifestProperty] = formatManifest(manifest)
			}
			return out
		}
		all := func() map[string]bool {
			m := make(map[string]bool, len(s.props))
			for name := range s.props {
				m[name] = true
			}
			return m
		}
		switch {
		case s.old == nil && len(s.props) == 0 && s.index != 0:
			// nothing to write or delete
		case s.old == nil:
			e.Properties = props(all())
			actions = append(actions, tablekit.InsertAction(e))
		case len(s.props) == 0 && s.index != 0:
			actions = append(actions, tablekit.DeleteAction(e, s.old.etag))
		case s.removed:
			e.Properties = props(all())
			actions = append(actions, tablekit.UpdateAction(e, s.old.etag))
		case s.written():
			e.Properties = props(s.changed)
			actions = append(actions, tablekit.MergeAction(e, s.old.etag))
		}
	}
	return actions, nil
}

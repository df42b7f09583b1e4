package transfer

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/tablekit/tablekit"
)

// How a table is split into ranges when the caller gives no boundaries
// (see the package documentation, "Splitting"): the sampler looks for
// PartitionKeys with probes, each a keys-only query for the first key at or
// after a point (one request, $top=1), and cuts the scope at the keys it
// finds. Every round of probes runs in parallel.
//
//   - Round 0 finds the first key a.
//   - Each later round probes every gap between two known keys k1 < k2 at
//     the position where they differ (and one position deeper in k1), and
//     after the last known key, at every position of it (the point just
//     past that prefix). Probe points use the character classes (digits,
//     upper and lower case letters, other ASCII, non-ASCII) seen at that
//     position in known keys, at most perGap points per gap.
//   - It stops when it knows target keys, a round finds nothing new, or
//     the probe budget is spent.
//
// So keys with a shared prefix ("tenant-0042", dates, padded numbers) and
// keys spread over an alphabet (hex, GUIDs, base64 hashes) are split in a
// few round trips. Probes see only keys, never the scope's filter, and a
// key inserted after sampling still falls in exactly one range: ranges
// always cover the whole scope.
//
// Where results are not in key order (Cosmos DB), a probe finds some key
// at or after its point, not the first: the keys found are still keys of
// the scope, and any keys cut it into ranges that cover it, so sampling
// stays correct; the gap before the first key found is probed too, as it
// may hold keys.
const (
	perGap        = 24
	maxRounds     = 8
	maxProbeDepth = 32
)

// sampler finds PartitionKeys in a range with probes.
type sampler struct {
	t           *tablekit.Table[tablekit.Entity]
	scope       keyRange
	concurrency int
	budget      int
	// unordered is true when the service does not return results in key
	// order: a probe then finds a key at or after its point, not the first.
	// When the first probe's answer shows Cosmos DB (see sample), it is set
	// then, and the target raised to unorderedTarget (if more).
	unordered       bool
	unorderedTarget int
	probes          atomic.Int64
	visited         map[string]bool
}

// probe returns the first PartitionKey in [x, to), if any (to "": the
// scope's end). Where results are not in key order it returns some
// PartitionKey in [x, to), the one the service happens to return first:
// unbounded probes at several points below it would all find that one,
// so probeAll bounds each. A page may come back empty before the end (the
// service's time limit, a partition boundary): the probe then reads on,
// each page one more probe.
func (s *sampler) probe(ctx context.Context, x, to string) (string, bool, error) {
	if s.scope.From != "" && compareKeys(x, s.scope.From) < 0 {
		x = s.scope.From
	}
	if to == "" || (s.scope.To != "" && compareKeys(to, s.scope.To) > 0) {
		// Never past the scope: a bound of the next point (where results
		// are not in key order) may lie beyond it.
		to = s.scope.To
	}
	if to != "" && compareKeys(x, to) >= 0 {
		return "", false, nil
	}
	opts := &tablekit.QueryOptions{PageSize: 1, Select: keysOnly, AllowTableScan: true, Reserved: true}
	for {
		s.probes.Add(1)
		page, err := s.t.QueryPage(ctx, keyRange{From: x, To: to}.Filter(), opts)
		if err != nil {
			return "", false, err
		}
		if len(page.Items) > 0 {
			return page.Items[0].PartitionKey, true, nil
		}
		if page.Continuation == "" {
			return "", false, nil
		}
		opts.Continuation = page.Continuation
	}
}

// sample returns up to about target sorted keys found in scope, the first
// key of the scope first (none when the scope is empty).
func (s *sampler) sample(ctx context.Context, target int) ([]string, error) {
	s.visited = map[string]bool{}
	first, ok, err := s.probe(ctx, s.scope.From, "")
	if err != nil || !ok {
		return nil, err
	}
	if !s.unordered && s.t.Account().Service() == tablekit.ServiceCosmosDB {
		s.unordered, target = true, max(target, s.unorderedTarget)
	}
	known := []string{first}
	for round := 0; round < maxRounds && len(known) < target; round++ {
		// At most twice the keys still wanted per round, shared out over
		// the gaps.
		allowed := min(s.budget-int(s.probes.Load()), 2*target)
		if allowed <= 0 {
			break
		}
		points := s.points(known, max(2, min(perGap, allowed/len(known))))
		if len(points) == 0 {
			break
		}
		if len(points) > allowed {
			points = spread(points, allowed)
		}
		found, err := s.probeAll(ctx, points, known)
		if err != nil {
			return nil, err
		}
		n := len(known)
		known = append(known, found...)
		slices.SortFunc(known, compareKeys)
		known = slices.Compact(known)
		if len(known) == n {
			break
		}
	}
	return known, nil
}

// probeAll runs probes at points in parallel and returns the keys found.
// Where results are not in key order, each probe is bounded by the next
// point or known key after it, so that probes of one round cover disjoint
// intervals and each finds a key of its own if its interval holds any.
func (s *sampler) probeAll(ctx context.Context, points, known []string) ([]string, error) {
	var bounds []string
	if s.unordered {
		bounds = append(slices.Clone(points), known...)
		slices.SortFunc(bounds, compareKeys)
		bounds = slices.Compact(bounds)
	}
	var (
		mu    sync.Mutex
		found []string
		first error
		wg    sync.WaitGroup
	)
	sem := make(chan struct{}, max(1, s.concurrency))
	for _, p := range points {
		s.visited[p] = true
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			to := ""
			if s.unordered {
				if i, found := slices.BinarySearchFunc(bounds, p, compareKeys); found && i+1 < len(bounds) {
					to = bounds[i+1]
				}
			}
			k, ok, err := s.probe(ctx, p, to)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			if ok {
				found = append(found, k)
			}
		})
	}
	wg.Wait()
	return found, first
}

// points returns the probe points of the next round, at most each per gap:
// first those that split a gap at the position where its keys differ,
// then deeper ones.
func (s *sampler) points(known []string, each int) []string {
	var out []string
	add := func(first, then []string) {
		first, then = s.fresh(first), s.fresh(then)
		pick := spread(first, each)
		out = append(out, pick...)
		out = append(out, spread(then, each-len(pick))...)
	}
	if s.unordered {
		// The first key found need not be the scope's first.
		add(s.pointsBefore(known, s.scope.From, known[0]))
	}
	for i := 0; i+1 < len(known); i++ {
		add(s.gapPoints(known, known[i], known[i+1]))
	}
	// After the last key: with two or more keys known, the characters
	// after the last key's at the position where known keys start to
	// differ (a histogram of the rest); then the point just past each
	// prefix of the last key, the shortest first.
	last := []rune(known[len(known)-1])
	var tail, wide []string
	for i := 0; i < len(last) && i < maxProbeDepth; i++ {
		tail = append(tail, string(last[:i])+string(next(last[i])))
	}
	tail = append(tail, string(last)+" ")
	if len(known) > 1 {
		d := commonPrefix([]rune(known[0]), last)
		if d < len(last) {
			for _, c := range alphabet(known, d) {
				if c > last[d] {
					wide = append(wide, string(last[:d])+string(c))
				}
			}
		}
		add(wide, tail)
	} else {
		for _, c := range alphabet(known, 0) {
			if len(last) > 0 && c > next(last[0]) {
				wide = append(wide, string(c))
			}
		}
		half := min(len(tail), max(1, each/2))
		add(tail[:half], append(wide, tail[half:]...))
	}
	return out
}

// commonPrefix returns the length of the common prefix of a and b.
func commonPrefix(a, b []rune) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// fresh drops points already probed or not valid UTF-8.
func (s *sampler) fresh(points []string) []string {
	var out []string
	for _, p := range points {
		if !s.visited[p] && utf8.ValidString(p) {
			out = append(out, p)
		}
	}
	return out
}

// gapPoints returns points strictly between k1 and k2: at the position
// where they differ, and one position deeper below k1.
func (s *sampler) gapPoints(known []string, k1, k2 string) (at, below []string) {
	r1, r2 := []rune(k1), []rune(k2)
	m := 0
	for m < len(r1) && m < len(r2) && r1[m] == r2[m] {
		m++
	}
	if m >= len(r2) || m > maxProbeDepth {
		return nil, nil
	}
	lo := rune(-1)
	if m < len(r1) {
		lo = r1[m]
	}
	for _, c := range alphabet(known, m) {
		if c > lo && c < r2[m] {
			at = append(at, string(r1[:m])+string(c))
		}
	}
	if m < len(r1) {
		lo := rune(-1)
		if m+1 < len(r1) {
			lo = r1[m+1]
		}
		for _, c := range alphabet(known, m+1) {
			if c > lo {
				below = append(below, string(r1[:m+1])+string(c))
			}
		}
	}
	return at, below
}

// pointsBefore returns points strictly between lo and hi along hi's path:
// at the position where they differ, then one position deeper each time
// (hi[:d] followed by a character below hi[d]), for the gap before the
// first key found, whose start lo may be a prefix of hi.
func (s *sampler) pointsBefore(known []string, lo, hi string) (at, deeper []string) {
	rl, rh := []rune(lo), []rune(hi)
	m := commonPrefix(rl, rh)
	if m >= len(rh) {
		return nil, nil
	}
	for d := m; d < len(rh) && d <= maxProbeDepth; d++ {
		for _, c := range alphabet(known, d) {
			if c >= rh[d] || (d == m && m < len(rl) && c <= rl[m]) {
				continue
			}
			p := string(rh[:d]) + string(c)
			if d == m {
				at = append(at, p)
			} else {
				deeper = append(deeper, p)
			}
		}
	}
	return at, deeper
}

// Character classes of probe alphabets.
var (
	digits = runeSpan('0', '9')
	upper  = runeSpan('A', 'Z')
	lower  = runeSpan('a', 'z')
	punct  = []rune(" !\"$%&'()*+,-.:;<=>@[]^_`{|}~")
	// nonASCII are points spread over the rest of the Basic Multilingual
	// Plane below the surrogates, where UTF-8 and UTF-16 order agree.
	nonASCII = []rune{0x80, 0x100, 0x400, 0x800, 0x1000, 0x3000, 0x4E00, 0x8000, 0xA000}
)

func runeSpan(lo, hi rune) []rune {
	out := make([]rune, 0, hi-lo+1)
	for c := lo; c <= hi; c++ {
		out = append(out, c)
	}
	return out
}

// alphabet returns the sorted probe characters for position pos: the
// classes of the characters known keys have there, or all classes.
func alphabet(known []string, pos int) []rune {
	var hasD, hasU, hasL, hasP, hasN bool
	for _, k := range known {
		r := []rune(k)
		if pos >= len(r) {
			continue
		}
		switch c := r[pos]; {
		case c >= '0' && c <= '9':
			hasD = true
		case c >= 'A' && c <= 'Z':
			hasU = true
		case c >= 'a' && c <= 'z':
			hasL = true
		case c < utf8.RuneSelf:
			hasP = true
		default:
			hasN = true
		}
	}
	if !hasD && !hasU && !hasL && !hasP && !hasN {
		hasD, hasU, hasL, hasP, hasN = true, true, true, true, true
	}
	var out []rune
	for _, c := range []struct {
		on bool
		rs []rune
	}{{hasP, punct}, {hasD, digits}, {hasU, upper}, {hasL, lower}, {hasN, nonASCII}} {
		if c.on {
			out = append(out, c.rs...)
		}
	}
	slices.Sort(out)
	return out
}

// next returns the smallest character after c that may appear in a key.
func next(c rune) rune {
	c++
	if c >= 0xD800 && c <= 0xDFFF {
		return 0xE000
	}
	return c
}

// spread picks at most n of points, evenly spaced.
func spread(points []string, n int) []string {
	if len(points) <= n {
		return points
	}
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, points[i*len(points)/n])
	}
	return out
}

package chaos

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// maxReported bounds the violations Report prints.
const maxReported = 30

// Violations collects the invariant violations a check finds. The zero
// Violations is ready to use, and it is safe for concurrent use.
type Violations struct {
	mu   sync.Mutex
	list []string
}

// Addf records a violation, described as fmt.Sprintf describes it. Say
// what was expected, what was found, and the ops that explain it (see
// [Op.String]).
func (v *Violations) Addf(format string, args ...any) {
	v.mu.Lock()
	v.list = append(v.list, fmt.Sprintf(format, args...))
	v.mu.Unlock()
}

// Len returns the number of violations recorded.
func (v *Violations) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.list)
}

// List returns the violations recorded, in order.
func (v *Violations) List() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.list...)
}

// Report fails t with the violations (the first 30 and their count), or
// logs that there were none.
func (v *Violations) Report(t testing.TB) {
	t.Helper()
	list := v.List()
	if len(list) == 0 {
		t.Logf("0 invariant violations")
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d invariant violation(s):", len(list))
	for i, s := range list {
		if i == maxReported {
			fmt.Fprintf(&b, "\n  ... and %d more", len(list)-maxReported)
			break
		}
		fmt.Fprintf(&b, "\n  %d. %s", i+1, strings.ReplaceAll(s, "\n", "\n     "))
	}
	t.Error(b.String())
}

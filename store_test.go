package tablekit_test

import (
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/index"
	"github.com/tablekit/tablekit/patterns"
)

// Every typed store of the module has the Store verbs, so that code
// written over a tablekit.Store works with any of them.
var (
	_ tablekit.Store[Employee]        = (*tablekit.Table[Employee])(nil)
	_ tablekit.Store[tablekit.Entity] = (*tablekit.Table[tablekit.Entity])(nil)
	_ tablekit.Store[Employee]        = (*index.SamePartition[Employee])(nil)
	_ tablekit.Store[Employee]        = (*index.CrossPartition[Employee])(nil)
	_ tablekit.Store[Employee]        = (*patterns.Wide[Employee])(nil)
)

package tablekit

import "github.com/tablekit/tablekit/internal/names"

// validateTableName checks name against the table service's rules
// (internal/names: 3 to 63 ASCII letters and digits, starting with a
// letter, and not the reserved name "tables"). A bad name gives a
// *[ValidationError] that matches [ErrInvalidKey] and says which rule
// failed. (Queue and container names are checked by the packages that use
// them, through internal/names too.)
func validateTableName(name string) error { return names.CheckTable(name) }

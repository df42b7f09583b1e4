package core

import (
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/codec"
)

// EntitySize returns the size of e as Azure measures it against the 1 MiB
// entity limit ("Understanding the Table service data model"): 4 bytes, 2
// per UTF-16 code unit of PartitionKey and RowKey, and for each custom
// property 8 bytes, 2 per character of its name and the size of its value.
// Patterns that split or spill entities use it to plan before writing.
func EntitySize(e tablekit.Entity) int { return codec.EntitySize(e) }

// PropertySize returns the size one custom property adds to an entity in
// Azure's formula (see EntitySize): 8 + 2*len(name) + the value's size,
// which is 4 + 2 per UTF-16 code unit for a string, 4 + its length for
// binary, 1 for a bool, 4 for an int32, 16 for a GUID and 8 otherwise.
func PropertySize(name string, value any) int { return codec.PropertySize(name, value) }

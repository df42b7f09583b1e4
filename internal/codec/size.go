package codec

import (
	"reflect"
	"time"
)

// EntitySize returns the size of e as Azure measures it against the 1 MiB
// entity limit ("Understanding the Table service data model"): 4 bytes, 2
// per UTF-16 code unit of PartitionKey and RowKey, and for each custom
// property 8 bytes, 2 per character of its name and the size of its value.
// Patterns that split or spill entities use it to plan before writing.
func EntitySize(e Entity) int {
	n := 4 + 2*utf16Len(e.PartitionKey) + 2*utf16Len(e.RowKey)
	for name, v := range e.Properties {
		if v != nil {
			n += PropertySize(name, v)
		}
	}
	return n
}

// PropertySize returns the size one custom property adds to an entity in
// Azure's formula (see EntitySize): 8 + 2*len(name) + the value's size,
// which is 4 + 2 per UTF-16 code unit for a string, 4 + its length for
// binary, 1 for a bool, 4 for an int32, 16 for a GUID and 8 otherwise.
func PropertySize(name string, value any) int {
	return 8 + 2*len(name) + valueSize(value)
}

func valueSize(v any) int {
	switch x := v.(type) {
	case string:
		return 4 + 2*utf16Len(x)
	case []byte:
		return 4 + len(x)
	case bool:
		return 1
	case int32:
		return 4
	case int64, int, float64, time.Time:
		return 8
	case GUID:
		return 16
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Array && rv.Len() == 16 {
		return 16
	}
	return 8
}

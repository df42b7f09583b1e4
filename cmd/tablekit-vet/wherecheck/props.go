package wherecheck

import (
	"go/types"
	"reflect"
	"strings"
)

// property is one name a filter can test on a table type.
type property struct {
	encrypt bool   // tagged encrypt: stored as ciphertext
	etag    bool   // the etag field: not a stored property
	edm     string // the EDM type it is stored as, "" if unknown
	from    string // where the type comes from, for messages: "field Age int"
}

// properties are the names a filter can use on a table struct type.
type properties struct {
	byName map[string]property
	names  []string          // in declaration order, for messages
	goName map[string]string // Go field name -> property name, where they differ
}

// structProperties reads the `table` struct tags of st as tablekit's codec
// does: the tag name or the field name, "-" skipped, untagged embedded
// structs flattened, unexported fields skipped; the pk, rk and timestamp
// fields are PartitionKey, RowKey and Timestamp, which every entity has.
// Each property's EDM type is the one the codec stores its field's Go type
// as; qual writes type names in messages.
func structProperties(st *types.Struct, qual types.Qualifier) properties {
	ps := properties{byName: map[string]property{}, goName: map[string]string{}}
	add := func(name string, p property) {
		if _, ok := ps.byName[name]; !ok {
			ps.names = append(ps.names, name)
		}
		ps.byName[name] = p
	}
	add("PartitionKey", property{edm: edmString, from: "a key"})
	add("RowKey", property{edm: edmString, from: "a key"})
	add("Timestamp", property{edm: edmDateTime, from: "the service's timestamp"})
	seen := map[*types.Struct]bool{}
	var walk func(st *types.Struct)
	walk = func(st *types.Struct) {
		if seen[st] {
			return
		}
		seen[st] = true
		for i := 0; i < st.NumFields(); i++ {
			f := st.Field(i)
			tag, hasTag := reflect.StructTag(st.Tag(i)).Lookup("table")
			if tag == "-" {
				continue
			}
			if f.Embedded() && !hasTag {
				if inner, ok := types.Unalias(f.Type()).Underlying().(*types.Struct); ok && !isTime(f.Type()) {
					walk(inner)
					continue
				}
			}
			if !f.Exported() {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if name == "" {
				name = f.Name()
			}
			var p property
			role, typeOpt := "", ""
			for _, o := range strings.Split(opts, ",") {
				switch o {
				case "pk", "rk", "timestamp", "etag":
					role = o
				case "encrypt":
					p.encrypt = true
				case "json", "int32", "int64", "guid":
					typeOpt = o
				}
			}
			p.edm = propertyEDM(f.Type(), typeOpt)
			p.from = "field " + f.Name() + " " + types.TypeString(f.Type(), qual)
			if typeOpt != "" {
				p.from += ", tagged " + typeOpt
			}
			switch role {
			case "pk":
				ps.goName[f.Name()] = "PartitionKey"
			case "rk":
				ps.goName[f.Name()] = "RowKey"
			case "timestamp":
				ps.goName[f.Name()] = "Timestamp"
			}
			if role == "" && name != f.Name() {
				ps.goName[f.Name()] = name
			}
			switch role {
			case "pk", "rk", "timestamp":
				// Stored as PartitionKey, RowKey, Timestamp: the Go name is
				// not a property.
			case "etag":
				p.etag = true
				if _, ok := ps.byName[name]; !ok {
					ps.byName[name] = p
				}
			default:
				add(name, p)
			}
		}
	}
	walk(st)
	return ps
}

// isTime reports whether t is time.Time.
func isTime(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Name() == "Time" && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "time"
}

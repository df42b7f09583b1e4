package azurite

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Azure Table storage's limits ("Understanding the Table service data
// model", "Performing entity group transactions" in the Azure Storage REST
// reference), as the front enforces them.
const (
	maxCustomProperties = 252      // 255 including PartitionKey, RowKey, Timestamp
	maxPropertyNameLen  = 255      // characters
	maxKeyUnits         = 512      // UTF-16 code units: "up to 1 KiB", stored as UTF-16
	maxStringUnits      = 32 << 10 // UTF-16 code units (64 KiB)
	maxBinaryBytes      = 64 << 10
	maxEntityBytes      = 1 << 20 // in the data model's size formula
	maxBatchActions     = 100
	maxBatchBytes       = 4 << 20
)

// Azure Cosmos DB for Table's limits where they differ, from "Frequently
// asked questions about Azure Cosmos DB for Table" (learn.microsoft.com/
// azure/cosmos-db/table/faq: "Row keys can only be up to 255 bytes",
// "Batches can only have up to 2 MBs", results "aren't sorted in partition
// key/row key order", the reserved property names Id, rid, etag and
// ResourceId) and "Azure Cosmos DB service quotas" (concepts-limits: an
// item is at most 2 MB, the UTF-8 length of its JSON). Cosmos DB has no
// 64 KiB property limit (Azure/azure-sdk-for-net#20533: a too-large
// property in a batch gives "No error" on Cosmos).
const (
	cosmosMaxRowKeyBytes = 255
	cosmosMaxBatchBytes  = 2 << 20
	cosmosMaxEntityJSON  = 2 << 20
)

var cosmosReservedNames = map[string]bool{"Id": true, "rid": true, "etag": true, "ResourceId": true}

// Azure's messages for the limit errors (Table Storage error codes; the
// PropertyValueTooLarge text is the one the service sends).
const (
	msgPropertyValueTooLarge = "The property value exceeds the maximum allowed size (64KB). If the property value is a string, it is UTF-16 encoded and the maximum number of characters should be 32K or less."
	msgEntityTooLarge        = "The entity is larger than the maximum size permitted."
	msgTooManyProperties     = "The entity contains more properties than allowed."
	msgPropertyNameTooLong   = "The property name exceeds the maximum allowed length."
	msgPropertyNameInvalid   = "The property name is invalid."
	msgDuplicateProperties   = "A property is specified more than one time."
	msgRequestBodyTooLarge   = "The request body is too large and exceeds the maximum permissible limit."
	msgInvalidInput          = "One of the request inputs is not valid."
	// Cosmos DB names the property (recorded).
	msgCosmosPropertyNameInvalid = "The property name '%s' is invalid. See https://docs.microsoft.com/en-us/rest/api/storageservices/Understanding-the-Table-Service-Data-Model"
)

// limitError is an entity or batch limit the request breaks, answered as
// Azure answers it.
type limitError struct {
	status int
	code   string
	msg    string
	// indexed: inside a batch, Azure prefixes the message with the
	// failing action's index ("3:..."); it does not for the errors found
	// while reading an entity's properties (PropertyValueTooLarge,
	// EntityTooLarge).
	indexed bool
}

func badRequest(code, msg string) *limitError {
	return &limitError{status: http.StatusBadRequest, code: code, msg: msg, indexed: true}
}

// entityLimits are the limits one front checks entities against.
type entityLimits struct {
	cosmos bool
}

// entityKeys are the keys an entity body holds.
type entityKeys struct {
	pk, rk       string
	hasPK, hasRK bool
}

// jsonProperty is one property of an entity body.
type jsonProperty struct {
	name string
	raw  json.RawMessage
}

// parseEntity reads an entity's OData JSON object: its properties in
// order, and a duplicate name if there is one.
func parseEntity(body []byte) (props []jsonProperty, dup string, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, "", err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, "", fmt.Errorf("entity body is not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, "", err
		}
		name, ok := tok.(string)
		if !ok {
			return nil, "", fmt.Errorf("entity body: property name expected")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, "", err
		}
		if seen[name] && dup == "" {
			dup = name
		}
		seen[name] = true
		props = append(props, jsonProperty{name, raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, "", err
	}
	return props, dup, nil
}

// keysOf returns the PartitionKey and RowKey of an entity body.
func keysOf(props []jsonProperty) entityKeys {
	var k entityKeys
	for _, p := range props {
		switch p.name {
		case "PartitionKey":
			k.hasPK = json.Unmarshal(p.raw, &k.pk) == nil
		case "RowKey":
			k.hasRK = json.Unmarshal(p.raw, &k.rk) == nil
		}
	}
	return k
}

// utf16Len returns the number of UTF-16 code units of s.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r > 0xffff {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// checkKey checks one key against Azure's rules: no / \ # ? or control
// characters (U+0000–U+001F, U+007F–U+009F), at most 1 KiB of UTF-16 (512
// code units, the limit Azurite applies too; the data model's size
// formula counts 2 bytes per key character); and in Cosmos mode a RowKey
// of at most 255 bytes. Azure answers a key too long with
// PropertyValueTooLarge.
func (l entityLimits) checkKey(name, value string) *limitError {
	for _, r := range value {
		if r == '/' || r == '\\' || r == '#' || r == '?' || r <= 0x1f || (r >= 0x7f && r <= 0x9f) {
			return badRequest("OutOfRangeInput", fmt.Sprintf("The '%s' parameter of value '%s' is out of range.", name, value))
		}
	}
	if utf16Len(value) > maxKeyUnits {
		return &limitError{status: http.StatusBadRequest, code: "PropertyValueTooLarge", msg: msgPropertyValueTooLarge}
	}
	if l.cosmos && name == "RowKey" && len(value) > cosmosMaxRowKeyBytes {
		// Cosmos DB's answer is not documented; OutOfRangeInput is the
		// Table service's code for a key it refuses.
		return badRequest("OutOfRangeInput", fmt.Sprintf("The 'RowKey' parameter of value '%s' is out of range.", value))
	}
	return nil
}

// validPropertyName reports whether name is a C# identifier, the rule
// Azure applies to property names.
func validPropertyName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		if r == utf8.RuneError {
			return false
		}
		ok := r == '_' || unicode.IsLetter(r) || unicode.Is(unicode.Nl, r)
		if i > 0 {
			ok = ok || unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Pc, unicode.Cf)
		}
		if !ok {
			return false
		}
	}
	return true
}

// checkEntity checks an entity body (insert, update, merge or upsert)
// whose keys are k against the limits. It returns nil when the entity is
// within them.
func (l entityLimits) checkEntity(body []byte, props []jsonProperty, k entityKeys) *limitError {
	if k.hasPK {
		if e := l.checkKey("PartitionKey", k.pk); e != nil {
			return e
		}
	}
	if k.hasRK {
		if e := l.checkKey("RowKey", k.rk); e != nil {
			return e
		}
	}
	types := map[string]string{}
	for _, p := range props {
		if base, ok := strings.CutSuffix(p.name, "@odata.type"); ok {
			var t string
			json.Unmarshal(p.raw, &t)
			types[base] = t
		}
	}
	size := 4 + 2*utf16Len(k.pk) + 2*utf16Len(k.rk)
	count := 0
	for _, p := range props {
		name := p.name
		switch {
		case name == "PartitionKey" || name == "RowKey" || name == "Timestamp":
			continue
		case strings.HasPrefix(name, "odata.") || strings.Contains(name, "@"):
			continue // annotations
		}
		if utf16Len(name) > maxPropertyNameLen {
			return badRequest("PropertyNameTooLong", msgPropertyNameTooLong)
		}
		if !validPropertyName(name) || (l.cosmos && cosmosReservedNames[name]) {
			if l.cosmos {
				return badRequest("PropertyNameInvalid", fmt.Sprintf(msgCosmosPropertyNameInvalid, name))
			}
			return badRequest("PropertyNameInvalid", msgPropertyNameInvalid)
		}
		vsize, e := l.valueSize(name, types[name], p.raw)
		if e != nil {
			return e
		}
		if vsize < 0 {
			continue // null: not stored
		}
		count++
		size += 8 + 2*utf16Len(name) + vsize
	}
	if count > maxCustomProperties {
		return badRequest("TooManyProperties", msgTooManyProperties)
	}
	if l.cosmos {
		if len(body) > cosmosMaxEntityJSON {
			return &limitError{status: http.StatusRequestEntityTooLarge, code: "RequestBodyTooLarge", msg: msgRequestBodyTooLarge}
		}
	} else if size > maxEntityBytes {
		return &limitError{status: http.StatusBadRequest, code: "EntityTooLarge", msg: msgEntityTooLarge}
	}
	return nil
}

// minDateTime is the earliest Edm.DateTime Azure stores.
var minDateTime = time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)

// valueSize returns the size of a property value in the data model's
// formula (string 4 + 2 per UTF-16 unit, binary 4 + its bytes, boolean 1,
// Int32 4, GUID 16, others 8), or -1 for null; or the limit it breaks.
func (l entityLimits) valueSize(name, edm string, raw json.RawMessage) (int, *limitError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return -1, nil
	}
	switch edm {
	case "Edm.Binary":
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, badRequest("InvalidInput", msgInvalidInput)
		}
		n := base64.StdEncoding.DecodedLen(len(s))
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			n = len(b)
		}
		if n > maxBinaryBytes && !l.cosmos {
			return 0, &limitError{status: http.StatusBadRequest, code: "PropertyValueTooLarge", msg: msgPropertyValueTooLarge}
		}
		return 4 + n, nil
	case "Edm.Boolean":
		return 1, nil
	case "Edm.Int32":
		return 4, nil
	case "Edm.Guid":
		return 16, nil
	case "Edm.Int64":
		// Beyond int64: 400 InvalidInput on Table storage and Cosmos DB
		// alike (recorded); Azurite stores it.
		text := string(raw)
		var s string
		if json.Unmarshal(raw, &s) == nil {
			text = s
		}
		if _, err := strconv.ParseInt(text, 10, 64); err != nil {
			return 0, badRequest("InvalidInput", msgInt64OutOfRange)
		}
		return 8, nil
	case "Edm.Double":
		return 8, nil
	case "Edm.DateTime":
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil && t.Before(minDateTime) {
				return 0, badRequest("OutOfRangeInput", fmt.Sprintf("The '%s' parameter of value '%s' is out of range.", name, t.UTC().Format("01/02/2006 15:04:05")))
			}
		}
		return 8, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, badRequest("InvalidInput", msgInvalidInput)
		}
		n := utf16Len(s)
		if n > maxStringUnits && !l.cosmos {
			return 0, &limitError{status: http.StatusBadRequest, code: "PropertyValueTooLarge", msg: msgPropertyValueTooLarge}
		}
		return 4 + 2*n, nil
	case 't', 'f':
		return 1, nil
	case '{', '[':
		return 0, badRequest("InvalidInput", msgInvalidInput)
	}
	if _, err := strconv.ParseInt(string(raw), 10, 32); err == nil {
		return 4, nil // an untyped whole number is an Int32
	}
	if l.cosmos && !bytes.ContainsAny(raw, ".eE") {
		if _, err := strconv.ParseInt(string(raw), 10, 64); err != nil {
			// Cosmos DB refuses an untyped whole number beyond int64
			// (recorded: 9223372036854775808000); Table storage stores
			// it as a Double.
			return 0, badRequest("InvalidInput", msgInvalidInput)
		}
	}
	return 8, nil
}

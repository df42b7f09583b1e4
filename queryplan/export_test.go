package queryplan

// The reasons, for the external tests (which compare Plan.Reasons).
const (
	ReasonNoFilter        = reasonNoFilter
	ReasonPropertiesOnly  = reasonPropertiesOnly
	ReasonRowKeyOnly      = reasonRowKeyOnly
	ReasonNoPartitionKey  = reasonNoPartitionKey
	ReasonOrPartitionKeys = reasonOrPartitionKey
	ReasonOrRowKeys       = reasonOrRowKeys
	ReasonNotOverKey      = reasonNotOverKey
	ReasonKeyNotEqual     = reasonKeyNotEqual
	ReasonKeyNotString    = reasonKeyNotString
	ReasonKeyNotLiteral   = reasonKeyNotLiteral
	ReasonNoRowKey        = reasonNoRowKey
	ReasonTimestamp       = reasonTimestamp
	ReasonPartitionRange  = reasonPartitionRange
	ReasonContradiction   = reasonContradiction
)

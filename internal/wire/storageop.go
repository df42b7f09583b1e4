package wire

// Request names: storage requests named the way the REST API names their
// operations ("InsertEntity", "GetMessages", "PutBlockList", ...).
// tablekit's Meter counts by these names and internal/testkit/chaos filters by
// them, so both share this one classifier.

import (
	"net/http"
	"net/url"
	"strings"
)

// The services a request may go to.
const (
	ServiceTable = "table"
	ServiceQueue = "queue"
	ServiceBlob  = "blob"
)

// Other is the operation name of requests [Classify] does not name more
// precisely.
const Other = "Other"

// Classify names the operation of a request to service ([ServiceTable],
// [ServiceQueue] or [ServiceBlob]), given its method, escaped path below the account (e.g.
// "/orders(PartitionKey='p',RowKey='r')", without "/devstoreaccount1"),
// query and headers. Requests it cannot name more precisely are [Other].
func Classify(service, method, path string, q url.Values, h http.Header) string {
	var segs []string
	if p := strings.Trim(path, "/"); p != "" {
		segs = strings.Split(p, "/")
	}
	if m := h.Get("X-HTTP-Method"); m != "" && method == http.MethodPost {
		method = strings.ToUpper(m)
	}
	switch service {
	case ServiceTable:
		return classifyTable(method, segs, q)
	case ServiceQueue:
		return classifyQueue(method, segs, q)
	case ServiceBlob:
		return classifyBlob(method, segs, q, h)
	}
	return Other
}

func classifyTable(method string, segs []string, q url.Values) string {
	if len(segs) == 0 || q.Get("comp") != "" || q.Get("restype") != "" {
		return Other // service properties and stats, table ACLs
	}
	res := segs[len(segs)-1]
	if res == "$batch" {
		if method == http.MethodPost {
			return "Transaction"
		}
		return Other
	}
	name, args, hasArgs := strings.Cut(res, "(")
	args = strings.TrimSuffix(args, ")")
	if name == "Tables" {
		switch {
		case method == http.MethodPost && args == "":
			return "CreateTable"
		case method == http.MethodGet:
			return "QueryTables"
		case method == http.MethodDelete && hasArgs && args != "":
			return "DeleteTable"
		}
		return Other
	}
	if args == "" { // the entity set: /table or /table()
		switch method {
		case http.MethodPost:
			return "InsertEntity"
		case http.MethodGet:
			return "QueryEntities"
		}
		return Other
	}
	switch method { // one entity: /table(PartitionKey='..',RowKey='..')
	case http.MethodGet:
		return "GetEntity"
	case http.MethodPut:
		return "UpdateEntity"
	case "MERGE", http.MethodPatch:
		return "MergeEntity"
	case http.MethodDelete:
		return "DeleteEntity"
	}
	return Other
}

func classifyQueue(method string, segs []string, q url.Values) string {
	comp := q.Get("comp")
	read := method == http.MethodGet || method == http.MethodHead
	switch {
	case len(segs) == 0:
		switch {
		case comp == "list":
			return "ListQueues"
		case comp == "properties" && read:
			return "GetServiceProperties"
		case comp == "properties" && method == http.MethodPut:
			return "SetServiceProperties"
		case comp == "stats":
			return "GetServiceStats"
		}
	case len(segs) == 1:
		switch {
		case comp == "metadata" && read:
			return "GetProperties"
		case comp == "metadata" && method == http.MethodPut:
			return "SetMetadata"
		case comp == "acl" && read:
			return "GetACL"
		case comp == "acl" && method == http.MethodPut:
			return "SetACL"
		case comp == "" && method == http.MethodPut:
			return "CreateQueue"
		case comp == "" && method == http.MethodDelete:
			return "DeleteQueue"
		}
	case len(segs) == 2 && segs[1] == "messages":
		switch method {
		case http.MethodPost:
			return "PutMessage"
		case http.MethodGet:
			if strings.EqualFold(q.Get("peekonly"), "true") {
				return "PeekMessages"
			}
			return "GetMessages"
		case http.MethodDelete:
			return "ClearMessages"
		}
	case len(segs) == 3 && segs[1] == "messages":
		switch method {
		case http.MethodPut:
			return "UpdateMessage"
		case http.MethodDelete:
			return "DeleteMessage"
		}
	}
	return Other
}

func classifyBlob(method string, segs []string, q url.Values, h http.Header) string {
	comp := q.Get("comp")
	read := method == http.MethodGet || method == http.MethodHead
	switch len(segs) {
	case 0:
		switch {
		case comp == "list":
			return "ListContainers"
		case comp == "properties" && q.Get("restype") == "account":
			return "GetAccountInfo"
		case comp == "properties" && read:
			return "GetServiceProperties"
		case comp == "properties" && method == http.MethodPut:
			return "SetServiceProperties"
		case comp == "stats":
			return "GetServiceStats"
		case comp == "userdelegationkey":
			return "GetUserDelegationKey"
		case comp == "blobs":
			return "FindBlobsByTags"
		case comp == "batch":
			return "BlobBatch"
		}
		return Other
	case 1:
		switch {
		case comp == "list":
			return "ListBlobs"
		case comp == "metadata" && method == http.MethodPut:
			return "SetContainerMetadata"
		case comp == "acl" && read:
			return "GetContainerACL"
		case comp == "acl" && method == http.MethodPut:
			return "SetContainerACL"
		case comp == "lease":
			return "LeaseContainer"
		case (comp == "" || comp == "metadata") && read:
			return "GetContainerProperties"
		case comp == "" && method == http.MethodPut:
			return "CreateContainer"
		case comp == "" && method == http.MethodDelete:
			return "DeleteContainer"
		}
		return Other
	}
	copySource := h.Get("X-Ms-Copy-Source") != ""
	switch comp {
	case "":
		switch method {
		case http.MethodPut:
			if copySource {
				if h.Get("X-Ms-Blob-Type") != "" {
					return "PutBlobFromURL"
				}
				return "CopyBlob"
			}
			return "PutBlob"
		case http.MethodGet:
			return "GetBlob"
		case http.MethodHead:
			return "GetProperties"
		case http.MethodDelete:
			return "DeleteBlob"
		}
	case "block":
		if copySource {
			return "PutBlockFromURL"
		}
		return "PutBlock"
	case "blocklist":
		if method == http.MethodPut {
			return "PutBlockList"
		}
		return "GetBlockList"
	case "appendblock":
		return "AppendBlock"
	case "page":
		return "PutPage"
	case "pagelist":
		return "GetPageRanges"
	case "metadata":
		if method == http.MethodPut {
			return "SetMetadata"
		}
		return "GetMetadata"
	case "properties":
		if method == http.MethodPut {
			return "SetProperties"
		}
	case "lease":
		return "LeaseBlob"
	case "snapshot":
		return "SnapshotBlob"
	case "tags":
		if method == http.MethodPut {
			return "SetTags"
		}
		return "GetTags"
	case "tier":
		return "SetTier"
	case "undelete":
		return "UndeleteBlob"
	case "copy":
		return "AbortCopy"
	}
	return Other
}

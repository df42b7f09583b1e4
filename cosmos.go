package tablekit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/tablekit/tablekit/internal/limits"
)

// Azure Cosmos DB for Table speaks the Table service's protocol, so tablekit
// works with it, but it does not return query results in PartitionKey and
// RowKey order. An Account is in Cosmos DB mode when Options.Service says
// so, when its table endpoint is a Cosmos DB one (see isCosmosEndpoint),
// or, with ServiceAuto, from the first answer that shows Cosmos DB on (see
// showsCosmos): its Tables, those opened before too, then behave as on
// Cosmos DB. APIs whose meaning is key order then either sort within the
// bounded result they read or refuse with an error matching ErrUnsupported
// that says why; each says which in its documentation. An operation whose
// result already depended on key order when an answer showed Cosmos DB
// fails so too rather than return what it read.

// Service is the service behind an Account's table endpoint, as
// [Options.Service] says it.
type Service uint8

const (
	// ServiceAuto (the zero value) finds the service out: Cosmos DB when
	// the table endpoint is one of Cosmos DB's (*.table.cosmos.azure.com
	// and the sovereign clouds' likes, or the Cosmos DB emulator on port
	// 8902), else Table storage until an answer shows Cosmos DB (its JSON
	// continuation tokens, its error bodies, query results out of key
	// order), from when on the Account is in Cosmos DB mode.
	ServiceAuto Service = iota
	// ServiceTableStorage says the endpoint is Azure Table storage (or
	// Azurite), whose results are in key order: an answer that shows
	// Cosmos DB is then an error (matching ErrInvalidInput), and so is
	// every later request of the Account.
	ServiceTableStorage
	// ServiceCosmosDB says the endpoint is Azure Cosmos DB for Table,
	// whatever its host: for a proxy, a custom domain or an emulator that
	// tablekit does not recognise.
	ServiceCosmosDB
)

// String names the setting ("auto", "Azure Table storage" or "Azure
// Cosmos DB for Table").
func (s Service) String() string {
	switch s {
	case ServiceAuto:
		return "auto"
	case ServiceTableStorage:
		return "Azure Table storage"
	case ServiceCosmosDB:
		return "Azure Cosmos DB for Table"
	}
	return fmt.Sprintf("Service(%d)", uint8(s))
}

// maxTransactionBytes is the transaction size limit of t's service.
func (t *Table[T]) maxTransactionBytes() int {
	if t.onCosmos() {
		return limits.CosmosTransactionBytes
	}
	return limits.TransactionBytes
}

// ErrUnsupported is matched by the error of an operation the service
// cannot do as asked, such as one that relies on results in key order on
// Azure Cosmos DB for Table.
var ErrUnsupported = errors.New("tablekit: not supported by this service")

// isCosmosEndpoint reports whether a table endpoint is Cosmos DB's: an
// account's host <account>.table.cosmos.<cloud> (or the legacy
// .table.cosmosdb.<cloud>) in the public cloud (azure.com), Azure China
// (azure.cn) or Azure Government (azure.us), the clouds whose Cosmos DB
// audiences Microsoft's own client names (aztables v1.4.1: cloud_config.go;
// its service_client.go isCosmosEndpoint takes any host with
// ".table.cosmos." or ".table.cosmosdb." in it), or the Cosmos DB
// emulator's table endpoint on port 8902 of this machine (Microsoft's
// "Azure Cosmos DB emulator" documentation gives its Table API connection
// string as
// "DefaultEndpointsProtocol=http;AccountName=localhost;AccountKey=...;TableEndpoint=http://localhost:8902/;").
func isCosmosEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, service := range []string{".table.cosmos.", ".table.cosmosdb."} {
		for _, cloud := range []string{"azure.com", "azure.cn", "azure.us"} {
			if strings.HasSuffix(host, service+cloud) {
				return true
			}
		}
	}
	return isLoopbackHost(host) && u.Port() == "8902"
}

// unorderedError is the error of op on a table whose results are not in
// key order.
func (t *Table[T]) unorderedError(op, instead string) error {
	return &ValidationError{
		Op:     op,
		Entity: t.name,
		Detail: op + " relies on results in PartitionKey and RowKey order, which Azure Cosmos DB for Table does not keep; " + instead,
		Err:    ErrUnsupported,
	}
}

// onCosmos reports whether t's Account is in Cosmos DB mode now.
func (t *Table[T]) onCosmos() bool { return t.svc.cosmos() }

// serviceState is what an Account knows of the service behind its table
// endpoint; its Tables share it, so that what one request learns holds
// for all of them.
type serviceState struct {
	setting Service
	on      atomic.Bool // Cosmos DB mode
	// shown is what first showed Cosmos DB in an answer ("" when nothing
	// did); when setting is ServiceTableStorage it is the error of every
	// later request.
	shown atomic.Pointer[string]
}

// newServiceState returns the state of an Account opened with setting on
// the table endpoint.
func newServiceState(setting Service, endpoint string) *serviceState {
	s := &serviceState{setting: setting}
	s.on.Store(setting == ServiceCosmosDB || (setting == ServiceAuto && isCosmosEndpoint(endpoint)))
	return s
}

// cosmos reports whether the Account is in Cosmos DB mode (false for a nil
// state: a zero Table, which sends nothing).
func (s *serviceState) cosmos() bool { return s != nil && s.on.Load() }

// show records that an answer showed Cosmos DB (what says how) and
// switches the Account to Cosmos DB mode, unless Options.Service says
// Table storage: then it returns the error of the Account's requests
// from now on.
func (s *serviceState) show(what string) error {
	if s == nil {
		return nil
	}
	s.shown.CompareAndSwap(nil, &what)
	if s.setting == ServiceTableStorage {
		return s.err()
	}
	s.on.Store(true)
	return nil
}

// err returns the error of a request of an Account whose Options.Service
// says Table storage while an answer showed Cosmos DB, else nil.
func (s *serviceState) err() error {
	if s == nil || s.setting != ServiceTableStorage {
		return nil
	}
	what := s.shown.Load()
	if what == nil {
		return nil
	}
	return &ValidationError{Property: "Service",
		Detail: "Options.Service says the table endpoint is Azure Table storage, but it answered as Azure Cosmos DB for Table (" + *what +
			"), whose query results are not in key order: open the Account with ServiceCosmosDB (or ServiceAuto)",
		Err: ErrInvalidInput}
}

// What shows Cosmos DB in its answers (Microsoft's recordings of the live
// services, testdata/recordings; see FIDELITY.md). Each cannot come from
// Table storage, whose answers tablekit must never take for Cosmos DB's.
const (
	shownToken    = "a continuation token in Cosmos DB's JSON shape"
	shownError    = "an error answer in Cosmos DB's shape"
	shownOrder    = "query results out of key order"
	shownTableTag = "an ETag on a new table"
)

// cosmosToken reports whether a NextPartitionKey continuation is Cosmos
// DB's: {"token":"...","range":{"min":"","max":"FF"}} (Table storage's
// look like "1!12!Y29udFRva2Vu"). A token read back from a tablekit
// continuation holds it so too.
func cosmosToken(npk string) bool {
	if !strings.HasPrefix(npk, "{") {
		return false
	}
	var t struct {
		Token *string `json:"token"`
	}
	return json.Unmarshal([]byte(npk), &t) == nil && t.Token != nil
}

// cosmosErrorBody reports whether an error answer's body (or a failed
// transaction's, which holds the failed action's) is worded as Cosmos DB
// words them: its messages end in "RequestID:<id>" (Table storage's and
// Azurite's in "RequestId:<id>\nTime:..."), 400s carry "ActivityId: ",
// and their language is "en-us" (Table storage's "en-US").
func cosmosErrorBody(body []byte) bool {
	return bytes.Contains(body, []byte(`\nRequestID:`)) ||
		bytes.Contains(body, []byte(`ActivityId: `)) ||
		bytes.Contains(body, []byte(`"lang":"en-us"`))
}

// showsCosmos returns what in an answer to req shows Cosmos DB, or "".
func showsCosmos(req *http.Request, resp *http.Response) string {
	if cosmosToken(resp.Header.Get("x-ms-continuation-NextPartitionKey")) {
		return shownToken
	}
	if resp.StatusCode == http.StatusCreated && req.Method == http.MethodPost && resp.Header.Get("ETag") != "" &&
		strings.HasSuffix(strings.TrimRight(req.URL.Path, "/"), "/Tables") {
		// Cosmos DB gives a new table an ETag; Table storage does not.
		return shownTableTag
	}
	batchFailed := resp.StatusCode == http.StatusAccepted && strings.HasPrefix(resp.Header.Get("Content-Type"), "multipart/mixed")
	if resp.StatusCode >= 400 || batchFailed {
		body, err := runtime.Payload(resp) // kept for the caller to read
		if err == nil && cosmosErrorBody(body) {
			return shownError
		}
	}
	return ""
}

// servicePolicy is the first per-call policy of an Account's table
// clients (tablekit's own and the SDK's): it reads what every answer shows
// of the service, and refuses every request, before sending it, of an
// Account whose Options.Service says Table storage once an answer showed
// Cosmos DB. The answer that showed it is returned as it is to a write
// (what the write did stands); a read gets the error instead.
type servicePolicy struct{ s *serviceState }

func (p servicePolicy) Do(req *policy.Request) (*http.Response, error) {
	if err := p.s.err(); err != nil {
		return nil, err
	}
	resp, err := req.Next()
	if err != nil || p.s.cosmos() {
		return resp, err
	}
	if what := showsCosmos(req.Raw(), resp); what != "" {
		if serr := p.s.show(what); serr != nil && req.Raw().Method == http.MethodGet {
			resp.Body.Close()
			return nil, serr
		}
	}
	return resp, nil
}

package wire

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/tablekit/tablekit/internal/codec"
)

// The service behind a table endpoint: Azure Cosmos DB for Table speaks
// the Table service's protocol but does not return query results in key
// order (see tablekit's Options.Service). An Account is in Cosmos DB mode
// when Options.Service says so, when its table endpoint is a Cosmos DB one
// (IsCosmosEndpoint), or, with ServiceAuto, from the first answer that
// shows Cosmos DB (ShowsCosmos); its ServiceState holds what it knows.

// IsCosmosEndpoint reports whether a table endpoint is Cosmos DB's: an
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
func IsCosmosEndpoint(endpoint string) bool {
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
	return IsLoopbackHost(host) && u.Port() == "8902"
}

// IsLoopbackHost reports whether host names this machine.
func IsLoopbackHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ServiceState is what an Account knows of the service behind its table
// endpoint; its Tables share it, so that what one request learns holds
// for all of them. A nil *ServiceState (a zero Table's) knows nothing and
// refuses nothing.
type ServiceState struct {
	// strict: Options.Service says Table storage, so an answer that shows
	// Cosmos DB is an error, then and for every later request.
	strict bool
	on     atomic.Bool // Cosmos DB mode
	// shown is what first showed Cosmos DB in an answer ("" when nothing
	// did); when strict it is the error of every later request.
	shown atomic.Pointer[string]
}

// NewServiceState returns the state of an Account: in Cosmos DB mode from
// the start when cosmos (Options.Service says Cosmos DB, or the endpoint
// is one of Cosmos DB's); tableStorage when Options.Service says Table
// storage (an answer that shows Cosmos DB is then an error).
func NewServiceState(cosmos, tableStorage bool) *ServiceState {
	s := &ServiceState{strict: tableStorage}
	s.on.Store(cosmos)
	return s
}

// Cosmos reports whether the Account is in Cosmos DB mode (false for a nil
// state: a zero Table, which sends nothing).
func (s *ServiceState) Cosmos() bool { return s != nil && s.on.Load() }

// Show records that an answer showed Cosmos DB (what says how, one of the
// Shown constants) and switches the Account to Cosmos DB mode, unless
// Options.Service says Table storage: then it returns the error of the
// Account's requests from now on.
func (s *ServiceState) Show(what string) error {
	if s == nil {
		return nil
	}
	s.shown.CompareAndSwap(nil, &what)
	if s.strict {
		return s.Err()
	}
	s.on.Store(true)
	return nil
}

// Err returns the error of a request of an Account whose Options.Service
// says Table storage while an answer showed Cosmos DB, else nil.
func (s *ServiceState) Err() error {
	if s == nil || !s.strict {
		return nil
	}
	what := s.shown.Load()
	if what == nil {
		return nil
	}
	return &codec.ValidationError{Property: "Service",
		Detail: "Options.Service says the table endpoint is Azure Table storage, but it answered as Azure Cosmos DB for Table (" + *what +
			"), whose query results are not in key order: open the Account with ServiceCosmosDB (or ServiceAuto)",
		Err: codec.ErrInvalidInput}
}

// Policy returns the state's pipeline policy: the first per-call policy
// of an Account's table clients (see servicePolicy).
func (s *ServiceState) Policy() policy.Policy { return servicePolicy{s} }

// What shows Cosmos DB in its answers (Microsoft's recordings of the live
// services, testdata/recordings; see FIDELITY.md). Each cannot come from
// Table storage, whose answers tablekit must never take for Cosmos DB's.
const (
	ShownToken    = "a continuation token in Cosmos DB's JSON shape"
	ShownError    = "an error answer in Cosmos DB's shape"
	ShownOrder    = "query results out of key order"
	ShownTableTag = "an ETag on a new table"
)

// CosmosToken reports whether a NextPartitionKey continuation is Cosmos
// DB's: {"token":"...","range":{"min":"","max":"FF"}} (Table storage's
// look like "1!12!Y29udFRva2Vu"). A token read back from a tablekit
// continuation holds it so too.
func CosmosToken(npk string) bool {
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

// ShowsCosmos returns what in an answer to req shows Cosmos DB, or "".
func ShowsCosmos(req *http.Request, resp *http.Response) string {
	if CosmosToken(resp.Header.Get("x-ms-continuation-NextPartitionKey")) {
		return ShownToken
	}
	if resp.StatusCode == http.StatusCreated && req.Method == http.MethodPost && resp.Header.Get("ETag") != "" &&
		strings.HasSuffix(strings.TrimRight(req.URL.Path, "/"), "/Tables") {
		// Cosmos DB gives a new table an ETag; Table storage does not.
		return ShownTableTag
	}
	batchFailed := resp.StatusCode == http.StatusAccepted && strings.HasPrefix(resp.Header.Get("Content-Type"), "multipart/mixed")
	if resp.StatusCode >= 400 || batchFailed {
		body, err := runtime.Payload(resp) // kept for the caller to read
		if err == nil && cosmosErrorBody(body) {
			return ShownError
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
type servicePolicy struct{ s *ServiceState }

func (p servicePolicy) Do(req *policy.Request) (*http.Response, error) {
	if err := p.s.Err(); err != nil {
		return nil, err
	}
	resp, err := req.Next()
	if err != nil || p.s.Cosmos() {
		return resp, err
	}
	if what := ShowsCosmos(req.Raw(), resp); what != "" {
		if serr := p.s.Show(what); serr != nil && req.Raw().Method == http.MethodGet {
			resp.Body.Close()
			return nil, serr
		}
	}
	return resp, nil
}

package tablekit

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/spans"
	"github.com/tablekit/tablekit/internal/storageop"
	"github.com/tablekit/tablekit/internal/tablewire"
)

// Options configures [Open] and [OpenWithCredential]. A nil *Options means
// the defaults. Everything made from the Account takes these settings from
// it, once: its Tables, their BulkWriters and the pattern packages' types
// built on them.
type Options struct {
	// ClientOptions are the Azure SDK's client options, for every client of
	// the Account: the Tables' own entity requests and the SDK's table,
	// queue and blob clients. Retry is the retry of each HTTP request (the
	// zero value is azcore's default: 3 retries, exponential back-off from
	// 800 ms); tablekit's own retries after it are [RetryPolicy] fields
	// named Retry. A nil Transport means an http.Client of the Account's
	// own with a connection pool sized for parallel storage work (up to 128
	// idle connections per host). PerRetryPolicies run on every try (a
	// fault-injecting policy goes there), before the Account's [Meter], so
	// that it counts only the requests actually sent; a nil entry in
	// PerCallPolicies or PerRetryPolicies is refused with
	// [ErrInvalidInput]. TracingProvider (for example
	// otelkit.TracingProvider) traces the requests and tablekit's own
	// operations; the zero value traces nothing.
	azcore.ClientOptions

	// Meter counts the Account's storage transactions. nil means a new
	// Meter for the Account. Sharing one Meter between Accounts adds their
	// counts together.
	Meter *Meter

	// Governor paces the writes of every Table opened through the Account
	// (its BulkWriters and the pattern packages' bulk paths) within the
	// account's and partitions' scalability targets, so that what it
	// learns about throttling is shared, and warns when a partition is
	// written near its target (see [Governor]). nil means a new Governor
	// with Azure's targets that logs to Logger.
	Governor *Governor

	// Logger receives the log records of everything made from the Account
	// (table scans, BulkWriters, the Account's own Governor); nil means
	// slog.Default() at the time of logging.
	Logger *slog.Logger

	// Cosmos says that the table endpoint is Azure Cosmos DB for Table,
	// whose query results are not in key order. Open recognises Cosmos DB
	// endpoints by their host; set it for a proxy or emulator it does not
	// recognise.
	Cosmos bool

	// TableEndpoint, QueueEndpoint and BlobEndpoint override the service
	// URLs [OpenWithCredential] derives from the account name (for example
	// "https://myaccount.table.core.windows.net"). Open ignores them: a
	// connection string names its own endpoints.
	TableEndpoint, QueueEndpoint, BlobEndpoint string

	// EndpointSuffix is the DNS suffix [OpenWithCredential] derives
	// endpoints with; "" means "core.windows.net" (Azure public cloud).
	EndpointSuffix string
}

// endpointURLs are the service URLs of an [Account], without a trailing
// slash, e.g. "https://myaccount.table.core.windows.net" or, for Azurite,
// "http://127.0.0.1:10002/devstoreaccount1".
type endpointURLs struct {
	Table, Queue, Blob string
}

// Account is a storage account, made by [Open] or [OpenWithCredential]
// (the zero Account has no clients: OpenTable refuses it, and its client
// getters return nil). Its Tables ([OpenTable]) read and write
// entities through a Table service client of tablekit's own, and it hands
// out the SDK's clients of its table (administration), queue and blob
// services; all share one set of client options (credential, retries,
// transport, policies) and one [Meter]. An Account is safe for concurrent
// use, and its client getters are cheap: call them where needed.
type Account struct {
	name      string
	endpoints endpointURLs
	tables    *aztables.ServiceClient // table administration
	wire      *tablewire.Client       // entities (see pipeline.go)
	queues    *azqueue.ServiceClient
	blobs     *azblob.Client
	meter     *Meter
	governor  *Governor
	logger    *slog.Logger // nil: slog.Default() at the time of logging
	tracing   tracing.Provider
	cosmos    bool
	// tableCred is the shared key the Account was opened with (nil for a
	// SAS or token credential); kept for signing SAS tokens.
	tableCred *aztables.SharedKeyCredential
}

// Well-known settings of the local storage emulator (Azurite).
const (
	devAccountName = "devstoreaccount1"
	devAccountKey  = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Open opens the account a connection string names. It accepts:
//
//   - "DefaultEndpointsProtocol=https;AccountName=...;AccountKey=...;EndpointSuffix=core.windows.net"
//     (as the Azure portal shows it; EndpointSuffix and DefaultEndpointsProtocol are optional),
//   - explicit endpoints, as Azurite's connection string has them:
//     "...;AccountName=devstoreaccount1;AccountKey=...;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;QueueEndpoint=...;BlobEndpoint=...",
//   - a SAS: "TableEndpoint=...;QueueEndpoint=...;BlobEndpoint=...;SharedAccessSignature=sv=...&sig=...",
//   - "UseDevelopmentStorage=true": Azurite on its standard ports 10000-10002.
//
// An invalid connection string (or options) gives a *[ValidationError]
// matching [ErrInvalidInput] that names the setting at fault; errors never
// contain the account key or a SAS signature. Open does not contact the
// service.
func Open(connectionString string, opts *Options) (*Account, error) {
	cs, err := parseConnectionString(connectionString)
	if err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &Options{}
	}
	a := &Account{name: cs.accountName, endpoints: cs.endpoints}
	if cs.accountKey != "" {
		err = a.openWithKey(cs, opts)
	} else {
		err = a.openWithSAS(cs, opts)
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// openWithKey makes the Account's clients for a connection string with
// an account key.
func (a *Account) openWithKey(cs *connString, opts *Options) error {
	badKey := connError("AccountKey is not a valid key")
	tableCred, err := aztables.NewSharedKeyCredential(cs.accountName, cs.accountKey)
	if err != nil {
		return badKey
	}
	queueCred, err := azqueue.NewSharedKeyCredential(cs.accountName, cs.accountKey)
	if err != nil {
		return badKey
	}
	blobCred, err := azblob.NewSharedKeyCredential(cs.accountName, cs.accountKey)
	if err != nil {
		return badKey
	}
	sharedKey, err := tablewire.NewSharedKey(cs.accountName, cs.accountKey)
	if err != nil {
		return badKey
	}
	a.tableCred = tableCred
	err = a.build(opts, sharedKey, func(table, queue, blob azcore.ClientOptions) (err error) {
		if a.tables, err = aztables.NewServiceClientWithSharedKey(cs.endpoints.Table, tableCred, &aztables.ClientOptions{ClientOptions: table}); err != nil {
			return err
		}
		if a.queues, err = azqueue.NewServiceClientWithSharedKeyCredential(cs.endpoints.Queue, queueCred, &azqueue.ClientOptions{ClientOptions: queue}); err != nil {
			return err
		}
		a.blobs, err = azblob.NewClientWithSharedKeyCredential(cs.endpoints.Blob, blobCred, &azblob.ClientOptions{ClientOptions: blob})
		return err
	})
	return clientsError(err, cs)
}

// openWithSAS makes the Account's clients for a connection string with a
// shared access signature.
func (a *Account) openWithSAS(cs *connString, opts *Options) error {
	sas := "?" + cs.sas
	err := a.build(opts, tablewire.NewSAS(cs.sas), func(table, queue, blob azcore.ClientOptions) (err error) {
		if a.tables, err = aztables.NewServiceClientWithNoCredential(cs.endpoints.Table+sas, &aztables.ClientOptions{ClientOptions: table}); err != nil {
			return err
		}
		if a.queues, err = azqueue.NewServiceClientWithNoCredential(cs.endpoints.Queue+sas, &azqueue.ClientOptions{ClientOptions: queue}); err != nil {
			return err
		}
		a.blobs, err = azblob.NewClientWithNoCredential(cs.endpoints.Blob+sas, &azblob.ClientOptions{ClientOptions: blob})
		return err
	})
	return clientsError(err, cs)
}

// clientsError is the error of Open when making its clients failed:
// refused options as they are, else a constructor's error. The SDK's
// constructors check no URL today; should one refuse what the parser
// accepted, the error does not echo a URL that may hold a SAS.
func clientsError(err error, cs *connString) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrInvalidInput) {
		return withOp("Open", err) // refused options
	}
	return &ValidationError{Op: "Open", Detail: "cannot create storage clients: " + redactSecrets(err.Error(), cs), Err: ErrInvalidInput}
}

// OpenWithCredential opens the account accountName with a token
// credential, usually azidentity's DefaultAzureCredential. Endpoints are
// https://<accountName>.{table,queue,blob}.<suffix> unless opts overrides
// them. Bad input gives a *[ValidationError] matching [ErrInvalidInput]. It
// does not contact the service.
func OpenWithCredential(accountName string, cred azcore.TokenCredential, opts *Options) (*Account, error) {
	if opts == nil {
		opts = &Options{}
	}
	if cred == nil {
		return nil, &ValidationError{Op: "OpenWithCredential", Property: "cred", Detail: "nil credential", Err: ErrInvalidInput}
	}
	if problem := accountNameProblem(accountName); problem != "" {
		return nil, &ValidationError{Op: "OpenWithCredential", Property: "accountName", Detail: problem, Err: ErrInvalidInput}
	}
	suffix := opts.EndpointSuffix
	if suffix == "" {
		suffix = "core.windows.net"
	}
	if strings.ContainsAny(suffix, "/:?#@ ") {
		return nil, &ValidationError{Op: "OpenWithCredential", Property: "EndpointSuffix", Detail: fmt.Sprintf("EndpointSuffix %q must be a DNS suffix such as core.windows.net", suffix), Err: ErrInvalidInput}
	}
	eps := endpointURLs{
		Table: "https://" + accountName + ".table." + suffix,
		Queue: "https://" + accountName + ".queue." + suffix,
		Blob:  "https://" + accountName + ".blob." + suffix,
	}
	for _, o := range []struct {
		name     string
		override string
		target   *string
	}{
		{"TableEndpoint", opts.TableEndpoint, &eps.Table},
		{"QueueEndpoint", opts.QueueEndpoint, &eps.Queue},
		{"BlobEndpoint", opts.BlobEndpoint, &eps.Blob},
	} {
		if o.override == "" {
			continue
		}
		ep, problem := checkEndpoint(o.name, o.override)
		if problem != "" {
			return nil, &ValidationError{Op: "OpenWithCredential", Property: o.name, Detail: problem, Err: ErrInvalidInput}
		}
		*o.target = ep
	}
	a := &Account{name: accountName, endpoints: eps}
	auth := runtime.NewBearerTokenPolicy(cred, []string{tablewire.TokenScope(eps.Table)},
		&policy.BearerTokenOptions{InsecureAllowCredentialWithHTTP: opts.InsecureAllowCredentialWithHTTP})
	err := a.build(opts, auth, func(table, queue, blob azcore.ClientOptions) (err error) {
		if a.tables, err = aztables.NewServiceClient(eps.Table, cred, &aztables.ClientOptions{ClientOptions: table}); err != nil {
			return err
		}
		if a.queues, err = azqueue.NewServiceClient(eps.Queue, cred, &azqueue.ClientOptions{ClientOptions: queue}); err != nil {
			return err
		}
		a.blobs, err = azblob.NewClient(eps.Blob, cred, &azblob.ClientOptions{ClientOptions: blob})
		return err
	})
	if err != nil {
		if !errors.Is(err, ErrInvalidInput) {
			err = &ValidationError{Detail: "cannot create storage clients: " + err.Error(), Err: ErrInvalidInput}
		}
		return nil, withOp("OpenWithCredential", err)
	}
	return a, nil
}

// build makes the shared client options and calls mk with the options of
// each service to make the SDK's clients: the same retry options,
// transport and caller policies, and a Meter policy of the service's own
// as the last per-retry policy. It then makes the Account's table
// data-plane client with the table options and auth, the credential's
// policy (see pipeline.go).
func (a *Account) build(opts *Options, auth policy.Policy, mk func(table, queue, blob azcore.ClientOptions) error) error {
	// azcore calls every policy it is given: a nil one would panic on the
	// Account's first request.
	for _, list := range []struct {
		name     string
		policies []policy.Policy
	}{{"PerCallPolicies", opts.PerCallPolicies}, {"PerRetryPolicies", opts.PerRetryPolicies}} {
		if i := slices.Index(list.policies, nil); i >= 0 {
			return &ValidationError{Detail: fmt.Sprintf("nil policy in Options.%s[%d]", list.name, i), Err: ErrInvalidInput}
		}
	}
	a.tracing = opts.TracingProvider
	a.cosmos = opts.Cosmos || isCosmosEndpoint(a.endpoints.Table)
	a.logger = opts.Logger
	a.meter = opts.Meter
	if a.meter == nil {
		a.meter = new(Meter)
	}
	a.governor = opts.Governor
	if a.governor == nil {
		a.governor = NewGovernor(&GovernorOptions{Logger: opts.Logger})
	}
	base := opts.ClientOptions
	if base.Transport == nil {
		base.Transport = newHTTPClient(a.endpoints.allLoopback())
	}
	if base.Telemetry.ApplicationID == "" {
		base.Telemetry.ApplicationID = "tablekit"
	}
	base.PerCallPolicies = append(slices.Clone(opts.PerCallPolicies), meterCallPolicy{})
	forService := func(service, endpoint string) azcore.ClientOptions {
		o := base
		// redactPolicy first: it strips a SAS signature from transport
		// errors, which print the request URL.
		o.PerRetryPolicies = append([]policy.Policy{redactPolicy{}}, opts.PerRetryPolicies...)
		o.PerRetryPolicies = append(o.PerRetryPolicies, a.meter.endpointPolicy(service, endpoint))
		return o
	}
	table := forService(storageop.Table, a.endpoints.Table)
	if err := mk(table, forService(storageop.Queue, a.endpoints.Queue), forService(storageop.Blob, a.endpoints.Blob)); err != nil {
		return err
	}
	var err error
	a.wire, err = newTableWire(a.endpoints.Table, table, auth, spans.NewTracer(a.tracing, "Microsoft.Tables"), a.cosmos)
	return err
}

// newHTTPClient returns the default transport: a connection pool sized for
// many parallel requests to one storage host. Azurite (on loopback) closes
// idle connections after 5 s, so the pool drops them sooner there, rather
// than race the server and send a request on a closing connection.
func newHTTPClient(loopback bool) *http.Client {
	idle := 90 * time.Second
	if loopback {
		idle = 4 * time.Second
	}
	return &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          512,
		MaxIdleConnsPerHost:   128,
		IdleConnTimeout:       idle,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
	}}
}

// Meter returns the Meter that counts this Account's storage transactions
// (nil for an Account not made by Open or OpenWithCredential).
func (a *Account) Meter() *Meter {
	if a == nil {
		return nil
	}
	return a.meter
}

// Tables returns the SDK's table service client, for what tablekit leaves
// to the SDK: creating, deleting and listing tables, access policies,
// service properties (Tables().NewClient(name) for one table). It shares
// the Account's options, credential and policies (its requests are counted
// by the Meter). Read and write entities with a [Table] ([OpenTable]). It
// is nil for an Account not made by Open or OpenWithCredential, as are the
// queue and blob clients.
func (a *Account) Tables() *aztables.ServiceClient {
	if a == nil {
		return nil
	}
	return a.tables
}

// Queues returns the SDK's queue service client (Queues().NewQueueClient(name)
// for one queue), with the Account's options, credential and policies.
func (a *Account) Queues() *azqueue.ServiceClient {
	if a == nil {
		return nil
	}
	return a.queues
}

// Blobs returns the SDK's blob client (Blobs().ServiceClient().NewContainerClient(name)
// for one container), with the Account's options, credential and policies.
func (a *Account) Blobs() *azblob.Client {
	if a == nil {
		return nil
	}
	return a.blobs
}

// allLoopback reports whether every endpoint is on this machine.
func (e endpointURLs) allLoopback() bool {
	for _, ep := range []string{e.Table, e.Queue, e.Blob} {
		u, err := url.Parse(ep)
		if err != nil || !isLoopbackHost(u.Hostname()) {
			return false
		}
	}
	return true
}

func isLoopbackHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// connString is a parsed connection string.
type connString struct {
	accountName string
	accountKey  string // base64, as given
	sas         string // query string without '?'
	endpoints   endpointURLs
}

// connError reports a connection string problem. msg must not contain a
// secret.
func connError(msg string, args ...any) error {
	return &ValidationError{Op: "Open", Detail: "connection string: " + fmt.Sprintf(msg, args...), Err: ErrInvalidInput}
}

// connSettings are the settings a storage connection string may have, by
// lower-case name.
var connSettings = map[string]string{
	"defaultendpointsprotocol":   "DefaultEndpointsProtocol",
	"accountname":                "AccountName",
	"accountkey":                 "AccountKey",
	"endpointsuffix":             "EndpointSuffix",
	"sharedaccesssignature":      "SharedAccessSignature",
	"usedevelopmentstorage":      "UseDevelopmentStorage",
	"developmentstorageproxyuri": "DevelopmentStorageProxyUri",
	"tableendpoint":              "TableEndpoint",
	"queueendpoint":              "QueueEndpoint",
	"blobendpoint":               "BlobEndpoint",
	"fileendpoint":               "FileEndpoint",
	"tablesecondaryendpoint":     "TableSecondaryEndpoint",
	"queuesecondaryendpoint":     "QueueSecondaryEndpoint",
	"blobsecondaryendpoint":      "BlobSecondaryEndpoint",
	"filesecondaryendpoint":      "FileSecondaryEndpoint",
}

// parseConnectionString parses and checks a storage connection string.
func parseConnectionString(s string) (*connString, error) {
	if strings.TrimSpace(s) == "" {
		return nil, connError(`it is empty (set AZURE_STORAGE_CONNECTION_STRING, or use "UseDevelopmentStorage=true" for a local Azurite)`)
	}
	settings := map[string]string{}
	for i, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			// Do not echo the part: it may be a pasted key.
			return nil, connError("part %d is not of the form Name=value (parts are separated by ';')", i+1)
		}
		canon, known := connSettings[strings.ToLower(name)]
		if !known {
			if isPlainName(name) {
				return nil, connError("unknown setting %q", name)
			}
			return nil, connError("part %d has an unknown setting name", i+1)
		}
		if _, dup := settings[canon]; dup {
			return nil, connError("%s is set twice", canon)
		}
		settings[canon] = strings.TrimSpace(value)
	}
	if len(settings) == 0 {
		return nil, connError(`it has no settings (set AZURE_STORAGE_CONNECTION_STRING, or use "UseDevelopmentStorage=true" for a local Azurite)`)
	}

	if v, ok := settings["UseDevelopmentStorage"]; ok {
		if !strings.EqualFold(v, "true") {
			return nil, connError(`UseDevelopmentStorage must be "true", not %q`, v)
		}
		for name := range settings {
			if name != "UseDevelopmentStorage" {
				return nil, connError("UseDevelopmentStorage=true cannot be combined with %s", name)
			}
		}
		return &connString{
			accountName: devAccountName,
			accountKey:  devAccountKey,
			endpoints: endpointURLs{
				Table: "http://127.0.0.1:10002/" + devAccountName,
				Queue: "http://127.0.0.1:10001/" + devAccountName,
				Blob:  "http://127.0.0.1:10000/" + devAccountName,
			},
		}, nil
	}
	if _, ok := settings["DevelopmentStorageProxyUri"]; ok {
		return nil, connError("DevelopmentStorageProxyUri is only valid with UseDevelopmentStorage=true, which tablekit does not combine with a proxy")
	}

	cs := &connString{accountName: settings["AccountName"]}
	if cs.accountName != "" {
		if problem := accountNameProblem(cs.accountName); problem != "" {
			return nil, connError("AccountName: %s", problem)
		}
	}
	key, hasKey := settings["AccountKey"]
	sas, hasSAS := settings["SharedAccessSignature"]
	switch {
	case hasKey:
		if key == "" {
			return nil, connError("AccountKey is empty")
		}
		if _, err := base64.StdEncoding.DecodeString(key); err != nil {
			return nil, connError("AccountKey is not valid base64 (copy the whole key, including any trailing '=')")
		}
		if cs.accountName == "" {
			return nil, connError("missing AccountName (required with AccountKey)")
		}
		cs.accountKey = key
	case hasSAS:
		sas = strings.TrimPrefix(sas, "?")
		q, err := url.ParseQuery(sas)
		if err != nil {
			return nil, connError("SharedAccessSignature is not a valid query string")
		}
		if q.Get("sig") == "" {
			return nil, connError("SharedAccessSignature has no sig parameter")
		}
		cs.sas = sas
	case cs.accountName != "":
		return nil, connError("missing AccountKey (or SharedAccessSignature) for account %q", cs.accountName)
	default:
		return nil, connError("missing AccountName and AccountKey (or UseDevelopmentStorage=true)")
	}

	protocol := "https"
	if p, ok := settings["DefaultEndpointsProtocol"]; ok {
		protocol = strings.ToLower(p)
		if protocol != "http" && protocol != "https" {
			return nil, connError("DefaultEndpointsProtocol must be http or https, not %q", p)
		}
	}
	suffix := "core.windows.net"
	if v, ok := settings["EndpointSuffix"]; ok {
		if v == "" || strings.ContainsAny(v, "/:?#@ ") {
			return nil, connError("EndpointSuffix %q must be a DNS suffix such as core.windows.net", v)
		}
		suffix = v
	}
	for _, svc := range []struct {
		setting, sub string
		target       *string
	}{
		{"TableEndpoint", "table", &cs.endpoints.Table},
		{"QueueEndpoint", "queue", &cs.endpoints.Queue},
		{"BlobEndpoint", "blob", &cs.endpoints.Blob},
	} {
		if v, ok := settings[svc.setting]; ok {
			ep, problem := checkEndpoint(svc.setting, v)
			if problem != "" {
				return nil, connError("%s", problem)
			}
			*svc.target = ep
			continue
		}
		if cs.accountName == "" {
			return nil, connError("missing %s (needed when there is no AccountName to derive it from)", svc.setting)
		}
		*svc.target = protocol + "://" + cs.accountName + "." + svc.sub + "." + suffix
	}
	if cs.accountName == "" {
		cs.accountName = accountFromEndpoint(cs.endpoints.Table)
	}
	return cs, nil
}

// checkEndpoint checks an explicit service endpoint and returns it without
// a trailing slash, or a description of what is wrong with it. The
// description names the setting but shows the URL only without its query,
// which may hold a SAS.
func checkEndpoint(setting, v string) (endpoint, problem string) {
	u, err := url.Parse(v)
	if err != nil {
		return "", setting + " is not a valid URL"
	}
	shown := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	switch {
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "", fmt.Sprintf("%s %q is not an absolute http:// or https:// URL", setting, shown)
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Sprintf("%s %q must not have a query or fragment (put a SAS in SharedAccessSignature)", setting, shown)
	case u.User != nil:
		return "", fmt.Sprintf("%s %q must not contain user info", setting, shown)
	}
	return strings.TrimRight(u.String(), "/"), ""
}

// accountNameProblem says what is wrong with a storage account name, or
// returns "".
func accountNameProblem(name string) string {
	if name == "" {
		return "account name is empty"
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return fmt.Sprintf("account name %q may have only letters and digits", name)
		}
	}
	if len(name) > 63 {
		return fmt.Sprintf("account name is %d characters long, more than 63", len(name))
	}
	return ""
}

// accountFromEndpoint guesses the account name from a service URL: the
// first path segment of an IP-style (Azurite) URL, else the first label of
// the host.
func accountFromEndpoint(ep string) string {
	u, err := url.Parse(ep)
	if err != nil {
		return ""
	}
	host := u.Hostname()
	if net.ParseIP(host) != nil || host == "localhost" {
		first, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
		return first
	}
	first, _, _ := strings.Cut(host, ".")
	return first
}

// isPlainName reports whether s looks like a setting name rather than a
// fragment of a key or signature, so that it is safe to show.
func isPlainName(s string) bool {
	if len(s) > 40 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// redactSecrets removes the key and SAS of cs from msg.
func redactSecrets(msg string, cs *connString) string {
	for _, secret := range []string{cs.accountKey, cs.sas} {
		if secret != "" {
			msg = strings.ReplaceAll(msg, secret, "REDACTED")
		}
	}
	if i := strings.Index(msg, "sig="); i >= 0 {
		msg = msg[:i] + "sig=REDACTED"
	}
	return msg
}

package tablekit

import (
	"crypto/tls"
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
	"github.com/tablekit/tablekit/internal/connstr"
	"github.com/tablekit/tablekit/internal/logs"
	"github.com/tablekit/tablekit/internal/spans"
	"github.com/tablekit/tablekit/internal/wire"
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

	// Service says which service the table endpoint is: Azure Table
	// storage, or Azure Cosmos DB for Table, whose query results are not in
	// key order. The zero value, ServiceAuto, recognises Cosmos DB by the
	// endpoint's host, else by its answers (see [Service]); say
	// ServiceCosmosDB for a proxy or emulator whose first answers should not
	// wait to be read, and ServiceTableStorage to make an endpoint that
	// answers as Cosmos DB an error.
	Service Service

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
	wire      *wire.Client            // entities (see pipeline.go)
	queues    *azqueue.ServiceClient
	blobs     *azblob.Client
	meter     *Meter
	governor  *Governor
	logger    *slog.Logger // nil: slog.Default() at the time of logging
	tracing   tracing.Provider
	svc       *wire.ServiceState // Cosmos DB mode, shared with the Tables
	service   Service            // Options.Service
}

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
	a := &Account{name: cs.AccountName, endpoints: endpointURLs(cs.Endpoints)}
	if cs.AccountKey != "" {
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
func (a *Account) openWithKey(cs *connstr.String, opts *Options) error {
	badKey := connError("AccountKey is not a valid key")
	tableCred, err := aztables.NewSharedKeyCredential(cs.AccountName, cs.AccountKey)
	if err != nil {
		return badKey
	}
	queueCred, err := azqueue.NewSharedKeyCredential(cs.AccountName, cs.AccountKey)
	if err != nil {
		return badKey
	}
	blobCred, err := azblob.NewSharedKeyCredential(cs.AccountName, cs.AccountKey)
	if err != nil {
		return badKey
	}
	sharedKey, err := wire.NewSharedKey(cs.AccountName, cs.AccountKey)
	if err != nil {
		return badKey
	}
	err = a.build(opts, sharedKey, func(table, queue, blob azcore.ClientOptions) (err error) {
		if a.tables, err = aztables.NewServiceClientWithSharedKey(cs.Endpoints.Table, tableCred, &aztables.ClientOptions{ClientOptions: table}); err != nil {
			return err
		}
		if a.queues, err = azqueue.NewServiceClientWithSharedKeyCredential(cs.Endpoints.Queue, queueCred, &azqueue.ClientOptions{ClientOptions: queue}); err != nil {
			return err
		}
		a.blobs, err = azblob.NewClientWithSharedKeyCredential(cs.Endpoints.Blob, blobCred, &azblob.ClientOptions{ClientOptions: blob})
		return err
	})
	return clientsError(err, cs)
}

// openWithSAS makes the Account's clients for a connection string with a
// shared access signature.
func (a *Account) openWithSAS(cs *connstr.String, opts *Options) error {
	sas := "?" + cs.SAS
	err := a.build(opts, wire.NewSAS(cs.SAS), func(table, queue, blob azcore.ClientOptions) (err error) {
		if a.tables, err = aztables.NewServiceClientWithNoCredential(cs.Endpoints.Table+sas, &aztables.ClientOptions{ClientOptions: table}); err != nil {
			return err
		}
		if a.queues, err = azqueue.NewServiceClientWithNoCredential(cs.Endpoints.Queue+sas, &azqueue.ClientOptions{ClientOptions: queue}); err != nil {
			return err
		}
		a.blobs, err = azblob.NewClientWithNoCredential(cs.Endpoints.Blob+sas, &azblob.ClientOptions{ClientOptions: blob})
		return err
	})
	return clientsError(err, cs)
}

// clientsError is the error of Open when making its clients failed:
// refused options as they are, else a constructor's error. The SDK's
// constructors check no URL today; should one refuse what the parser
// accepted, the error does not echo a URL that may hold a SAS.
func clientsError(err error, cs *connstr.String) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrInvalidInput) {
		return withOp("Open", err) // refused options
	}
	return &ValidationError{Op: "Open", Detail: "cannot create storage clients: " + cs.Redact(err.Error()), Err: ErrInvalidInput}
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
	if problem := connstr.AccountNameProblem(accountName); problem != "" {
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
		ep, problem := connstr.CheckEndpoint(o.name, o.override)
		if problem != "" {
			return nil, &ValidationError{Op: "OpenWithCredential", Property: o.name, Detail: problem, Err: ErrInvalidInput}
		}
		*o.target = ep
	}
	a := &Account{name: accountName, endpoints: eps}
	auth := runtime.NewBearerTokenPolicy(cred, []string{wire.TokenScope(eps.Table)},
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
	if opts.Service > ServiceCosmosDB {
		return &ValidationError{Property: "Service", Detail: fmt.Sprintf("Options.Service is %v: want ServiceAuto, ServiceTableStorage or ServiceCosmosDB", opts.Service), Err: ErrInvalidInput}
	}
	a.tracing = opts.TracingProvider
	a.service = opts.Service
	a.svc = wire.NewServiceState(opts.Service == ServiceCosmosDB || (opts.Service == ServiceAuto && wire.IsCosmosEndpoint(a.endpoints.Table)), opts.Service == ServiceTableStorage)
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
		if service == wire.ServiceTable {
			o.PerCallPolicies = append([]policy.Policy{a.svc.Policy()}, o.PerCallPolicies...)
		}
		// RedactPolicy first: it strips a SAS signature from transport
		// errors, which print the request URL.
		o.PerRetryPolicies = append([]policy.Policy{connstr.RedactPolicy{}}, opts.PerRetryPolicies...)
		o.PerRetryPolicies = append(o.PerRetryPolicies, a.meter.endpointPolicy(service, endpoint))
		return o
	}
	table := forService(wire.ServiceTable, a.endpoints.Table)
	if err := mk(table, forService(wire.ServiceQueue, a.endpoints.Queue), forService(wire.ServiceBlob, a.endpoints.Blob)); err != nil {
		return err
	}
	var err error
	a.wire, err = newTableWire(a.endpoints.Table, table, auth, spans.NewTracer(a.tracing, spans.TableNamespace(a.svc.Cosmos())), a.svc.Cosmos)
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

// Name returns the storage account's name ("devstoreaccount1" for
// Azurite; "" for an Account not made by Open or OpenWithCredential).
func (a *Account) Name() string {
	if a == nil {
		return ""
	}
	return a.name
}

// Governor returns the Governor that paces the writes of the Account's
// tables (Options.Governor, or the one the Account made): a pattern that
// writes on its own, or through [Governor.Do], paces itself with it.
func (a *Account) Governor() *Governor {
	if a == nil {
		return nil
	}
	return a.governor
}

// Logger returns the Account's logger, Options.Logger; when that is nil,
// a logger that writes to slog.Default() as it is at the time of logging.
// It is never nil: code built on the Account logs to it as tablekit does.
func (a *Account) Logger() *slog.Logger {
	if a == nil {
		return logs.Or(nil)
	}
	return logs.Or(a.logger)
}

// Service returns the service the Account's tables are on, as far as it
// knows now: ServiceCosmosDB once Options.Service says so or (with
// ServiceAuto) an answer showed it, else Options.Service as given. Code
// whose result depends on what the service does (the key order of query
// results) asks again after it has read: with ServiceAuto, an answer may
// show Cosmos DB later.
func (a *Account) Service() Service {
	if a == nil || a.svc == nil {
		return ServiceAuto
	}
	if a.svc.Cosmos() {
		return ServiceCosmosDB
	}
	return a.service
}

// TracingProvider returns the tracing provider the Account was opened
// with (Options.ClientOptions.TracingProvider; the zero Provider, which
// traces nothing, by default): code built on the Account starts its
// spans with a tracer of it.
func (a *Account) TracingProvider() tracing.Provider {
	if a == nil {
		return tracing.Provider{}
	}
	return a.tracing
}

// Endpoints returns the Account's service URLs, without a trailing slash:
// "https://myaccount.table.core.windows.net" and its queue and blob
// siblings, or, for Azurite, "http://127.0.0.1:10002/devstoreaccount1" and
// so on. The SDK's table clients do not say theirs.
func (a *Account) Endpoints() (table, queue, blob string) {
	if a == nil {
		return "", "", ""
	}
	return a.endpoints.Table, a.endpoints.Queue, a.endpoints.Blob
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
		if err != nil || !wire.IsLoopbackHost(u.Hostname()) {
			return false
		}
	}
	return true
}

// connError reports a connection string problem. msg must not contain a
// secret.
func connError(msg string, args ...any) error {
	return &ValidationError{Op: "Open", Detail: "connection string: " + fmt.Sprintf(msg, args...), Err: ErrInvalidInput}
}

// parseConnectionString parses and checks a storage connection string
// (see internal/connstr, which package sas shares).
func parseConnectionString(s string) (*connstr.String, error) {
	cs, err := connstr.Parse(s)
	if err != nil {
		return nil, connError("%s", err)
	}
	return cs, nil
}

package tablekit

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	blobsas "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	queuesas "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/sas"
	"github.com/tablekit/tablekit/internal/tablewire"
	"github.com/tablekit/tablekit/keys"
)

// tableSASVersion is the signed version (sv) of table SAS tokens: the one
// aztables v1.4.1 uses (aztables.SASVersion), whose string-to-sign has the
// PartitionKey/RowKey range fields.
const tableSASVersion = "2019-02-02"

// sasTimeFormat is how SAS start and expiry times are written.
const sasTimeFormat = "2006-01-02T15:04:05Z"

// TablePermissions are the operations a table SAS allows.
type TablePermissions struct {
	Read   bool // query and get entities
	Add    bool // insert entities (and upsert, with Update)
	Update bool // update and merge entities (and upsert, with Add)
	Delete bool // delete entities
}

// String returns the permissions in the service's canonical order, e.g. "raud".
func (p TablePermissions) String() string {
	var b strings.Builder
	for _, f := range []struct {
		on bool
		c  byte
	}{{p.Read, 'r'}, {p.Add, 'a'}, {p.Update, 'u'}, {p.Delete, 'd'}} {
		if f.on {
			b.WriteByte(f.c)
		}
	}
	return b.String()
}

// TableSASOptions refines a table SAS. A nil *TableSASOptions means the
// whole table, valid from now.
type TableSASOptions struct {
	// Start is when the token becomes valid; zero means at once. Set it a
	// few minutes in the past to allow for clock skew.
	Start time.Time
	// StartPartitionKey and StartRowKey are the first entity the token
	// reaches, EndPartitionKey and EndRowKey the last (both inclusive).
	// Empty means unbounded; a row key bound needs the partition key bound
	// on the same side. StartPartitionKey == EndPartitionKey limits the
	// token to one partition.
	StartPartitionKey, StartRowKey string
	EndPartitionKey, EndRowKey     string
}

// SASOptions refines a queue or blob SAS. A nil *SASOptions means valid
// from now.
type SASOptions struct {
	// Start is when the token becomes valid; zero means at once.
	Start time.Time
}

// QueuePermissions are the operations a queue SAS allows.
type QueuePermissions struct {
	Read    bool // peek messages and read metadata
	Add     bool // put messages
	Update  bool // update messages (with Process)
	Process bool // get and delete messages
}

// BlobPermissions are the operations a container or blob SAS allows.
type BlobPermissions struct {
	Read   bool // read blobs
	Add    bool // append blocks
	Create bool // create new blobs (not overwrite)
	Write  bool // write and overwrite blobs
	Delete bool // delete blobs
	List   bool // list blobs (container SAS only)
}

// sasError reports a SAS problem. msg must not contain a secret.
func sasError(resource, msg string, args ...any) error {
	return &ValidationError{Entity: resource, Property: "SAS", Detail: fmt.Sprintf(msg, args...), Err: ErrInvalidInput}
}

// checkSASTimes checks a token's validity window and returns it in UTC,
// truncated to the second (the token's precision).
func checkSASTimes(resource string, start, expiry time.Time) (time.Time, time.Time, error) {
	if expiry.IsZero() {
		return start, expiry, sasError(resource, "the expiry time is required: a SAS cannot be revoked except by rotating the account key (or through a stored access policy), so it must expire")
	}
	expiry = expiry.UTC().Truncate(time.Second)
	if !start.IsZero() {
		start = start.UTC().Truncate(time.Second)
	}
	if !expiry.After(time.Now()) {
		return start, expiry, sasError(resource, "the expiry time %s is not in the future", expiry.Format(sasTimeFormat))
	}
	if !start.IsZero() && !expiry.After(start) {
		return start, expiry, sasError(resource, "the expiry time %s is not after the start time %s", expiry.Format(sasTimeFormat), start.Format(sasTimeFormat))
	}
	return start, expiry, nil
}

func needKey(resource string) error {
	return sasError(resource, "signing a service SAS needs the account key: open the Account with a connection string that has an AccountKey (an Account opened with a token credential or a SAS cannot sign)")
}

// tableSASValues are the signed fields of a table service SAS, as they
// appear in the string-to-sign and the query string.
type tableSASValues struct {
	permissions string // sp, canonical order
	start       string // st, sasTimeFormat or ""
	expiry      string // se
	table       string // tn, and (lowercased) the canonical resource
	identifier  string // si
	ip          string // sip
	protocol    string // spr
	version     string // sv
	startPK     string // spk
	startRK     string // srk
	endPK       string // epk
	endRK       string // erk
}

// stringToSign returns the string a table SAS signature is the
// HMAC-SHA256 of (the Table service's format for version 2018-11-09 and
// later): the signed fields in this order, joined with newlines, with the
// canonical resource /table/<account>/<lowercase table name>.
func (v *tableSASValues) stringToSign(account string) string {
	return strings.Join([]string{
		v.permissions,
		v.start,
		v.expiry,
		"/table/" + account + "/" + strings.ToLower(v.table),
		v.identifier,
		v.ip,
		v.protocol,
		v.version,
		v.startPK,
		v.startRK,
		v.endPK,
		v.endRK,
	}, "\n")
}

// query returns the token: every signed field that is set, and sig.
func (v *tableSASValues) query(sig string) string {
	q := url.Values{}
	for _, f := range []struct{ name, value string }{
		{"sv", v.version}, {"tn", v.table}, {"sp", v.permissions}, {"st", v.start}, {"se", v.expiry},
		{"si", v.identifier}, {"sip", v.ip}, {"spr", v.protocol},
		{"spk", v.startPK}, {"srk", v.startRK}, {"epk", v.endPK}, {"erk", v.endRK},
	} {
		if f.value != "" {
			q.Set(f.name, f.value)
		}
	}
	q.Set("sig", sig)
	return q.Encode()
}

// signWithCredential returns the signature of v under cred. aztables does
// not expose the account key, so the HMAC is computed by its
// SASSignatureValues.Sign, whose string-to-sign is field for field the one
// stringToSign builds (sas_internal_test.go checks that they agree); only
// the signature is taken from its output.
func (v *tableSASValues) signWithCredential(cred *aztables.SharedKeyCredential) (string, error) {
	sv := aztables.SASSignatureValues{
		Version:           v.version,
		Protocol:          aztables.SASProtocol(v.protocol),
		Permissions:       v.permissions,
		Identifier:        v.identifier,
		TableName:         v.table,
		StartPartitionKey: v.startPK,
		StartRowKey:       v.startRK,
		EndPartitionKey:   v.endPK,
		EndRowKey:         v.endRK,
	}
	var err error
	if v.start != "" {
		if sv.StartTime, err = time.Parse(sasTimeFormat, v.start); err != nil {
			return "", err
		}
	}
	if sv.ExpiryTime, err = time.Parse(sasTimeFormat, v.expiry); err != nil {
		return "", err
	}
	if v.ip != "" {
		return "", errors.New("IP ranges are not supported")
	}
	enc, err := sv.Sign(cred)
	if err != nil {
		return "", errors.New("cannot sign the SAS")
	}
	q, err := url.ParseQuery(enc)
	if err != nil || q.Get("sig") == "" {
		return "", errors.New("cannot sign the SAS")
	}
	return q.Get("sig"), nil
}

// TableSASURL returns the URL of table with a service SAS that allows perms
// until expiry and, with opts, only within a PartitionKey/RowKey range. It
// is the trusted side of the design guide's pattern: a service that holds
// the account key signs a token for exactly what a client may touch (say,
// one customer's partition) and hands it out; the client opens it with
// [OpenTableSAS] and the storage service enforces the scope.
//
// aztables' SASSignatureValues signs a range but leaves it out of the query
// string, so the service refuses its tokens. TableSASURL builds the Table
// service's string-to-sign (version 2019-02-02: permissions, start, expiry,
// /table/<account>/<table>, identifier, IP, protocol, version, spk, srk,
// epk, erk) and puts every signed field in the token. Azurite checks the
// signature, range included, but does not enforce the range; Azure does.
// Tokens for an https endpoint are valid over HTTPS only.
//
// A SAS is a bearer secret until it expires: keep it short-lived and hand
// it out over HTTPS. tablekit never puts a signature or the account key in
// an error. The Account must have been opened with the account key.
// TableSASURL does not contact the service and does not check that the
// table exists.
func (a *Account) TableSASURL(table string, perms TablePermissions, expiry time.Time, opts *TableSASOptions) (_ string, err error) {
	defer func() { err = withOp("TableSASURL", err) }()
	if err := validateTableName(table); err != nil {
		return "", err
	}
	if opts == nil {
		opts = &TableSASOptions{}
	}
	v, err := a.tableSASValues(table, perms, expiry, opts)
	if err != nil {
		return "", err
	}
	sig, err := v.signWithCredential(a.tableCred)
	if err != nil {
		return "", sasError(table, "%v", err)
	}
	return a.endpoints.Table + "/" + table + "?" + v.query(sig), nil
}

// tableSASValues checks a table SAS request and returns its signed fields.
func (a *Account) tableSASValues(table string, perms TablePermissions, expiry time.Time, opts *TableSASOptions) (*tableSASValues, error) {
	if a.tableCred == nil {
		return nil, needKey(table)
	}
	if perms == (TablePermissions{}) {
		return nil, sasError(table, "no permissions: set at least one of Read, Add, Update, Delete")
	}
	start, expiry, err := checkSASTimes(table, opts.Start, expiry)
	if err != nil {
		return nil, err
	}
	for _, k := range []struct{ name, value string }{
		{"StartPartitionKey", opts.StartPartitionKey}, {"StartRowKey", opts.StartRowKey},
		{"EndPartitionKey", opts.EndPartitionKey}, {"EndRowKey", opts.EndRowKey},
	} {
		if err := keys.Validate(k.value); err != nil {
			return nil, &ValidationError{Entity: table, Property: k.name, Detail: "SAS range: " + err.Error(), Err: ErrInvalidKey}
		}
	}
	if opts.StartRowKey != "" && opts.StartPartitionKey == "" {
		return nil, sasError(table, "StartRowKey needs StartPartitionKey: a row key bound applies within the start partition")
	}
	if opts.EndRowKey != "" && opts.EndPartitionKey == "" {
		return nil, sasError(table, "EndRowKey needs EndPartitionKey: a row key bound applies within the end partition")
	}
	if opts.StartPartitionKey != "" && opts.EndPartitionKey != "" {
		c := keys.Compare(opts.StartPartitionKey, opts.EndPartitionKey)
		if c > 0 || (c == 0 && opts.StartRowKey != "" && opts.EndRowKey != "" && keys.Compare(opts.StartRowKey, opts.EndRowKey) > 0) {
			return nil, sasError(table, "the range is empty: its start is after its end")
		}
	}
	v := &tableSASValues{
		permissions: perms.String(),
		expiry:      expiry.Format(sasTimeFormat),
		table:       table,
		version:     tableSASVersion,
		startPK:     opts.StartPartitionKey,
		startRK:     opts.StartRowKey,
		endPK:       opts.EndPartitionKey,
		endRK:       opts.EndRowKey,
	}
	if !start.IsZero() {
		v.start = start.Format(sasTimeFormat)
	}
	if strings.HasPrefix(a.endpoints.Table, "https://") {
		v.protocol = "https"
	}
	return v, nil
}

// QueueSASURL returns the URL of queue with a service SAS that allows perms
// until expiry, for a client that opens it with [OpenQueueSAS] (for
// example a producer that may only add messages). The Account must have
// been opened with the account key.
//
// azqueue signs queue tokens for HTTPS only, so QueueSASURL refuses an
// http queue endpoint (such as Azurite's): such a token could not be used.
func (a *Account) QueueSASURL(queue string, perms QueuePermissions, expiry time.Time, opts *SASOptions) (_ string, err error) {
	defer func() { err = withOp("QueueSASURL", err) }()
	if err := validateQueueName(queue); err != nil {
		return "", err
	}
	if opts == nil {
		opts = &SASOptions{}
	}
	if a.tableCred == nil {
		return "", needKey(queue)
	}
	if perms == (QueuePermissions{}) {
		return "", sasError(queue, "no permissions: set at least one of Read, Add, Update, Process")
	}
	start, expiry, err := checkSASTimes(queue, opts.Start, expiry)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(a.endpoints.Queue, "https://") {
		return "", sasError(queue, "azqueue signs queue SAS tokens for HTTPS only (spr=https), and this account's queue endpoint is not https (Azurite?): the token would be refused")
	}
	var o *azqueue.GetSASURLOptions
	if !start.IsZero() {
		o = &azqueue.GetSASURLOptions{StartTime: &start}
	}
	u, err := a.queues.NewQueueClient(queue).GetSASURL(queuesas.QueuePermissions{Read: perms.Read, Add: perms.Add, Update: perms.Update, Process: perms.Process}, expiry, o)
	if err != nil {
		return "", sasError(queue, "cannot sign the SAS: %s", redactSecretText(err.Error()))
	}
	return u, nil
}

// ContainerSASURL returns the URL of a blob container with a service SAS
// that allows perms on its blobs until expiry, for a client that opens it
// with [OpenContainerSAS]. The Account must have been opened with the
// account key.
func (a *Account) ContainerSASURL(containerName string, perms BlobPermissions, expiry time.Time, opts *SASOptions) (_ string, err error) {
	defer func() { err = withOp("ContainerSASURL", err) }()
	if err := validateContainerName(containerName); err != nil {
		return "", err
	}
	start, expiry, err := a.checkBlobSAS(containerName, perms, expiry, opts)
	if err != nil {
		return "", err
	}
	var o *container.GetSASURLOptions
	if !start.IsZero() {
		o = &container.GetSASURLOptions{StartTime: &start}
	}
	u, err := a.blobs.ServiceClient().NewContainerClient(containerName).GetSASURL(blobsas.ContainerPermissions{
		Read: perms.Read, Add: perms.Add, Create: perms.Create, Write: perms.Write, Delete: perms.Delete, List: perms.List,
	}, expiry, o)
	if err != nil {
		return "", sasError(containerName, "cannot sign the SAS: %s", redactSecretText(err.Error()))
	}
	return u, nil
}

// BlobSASURL returns the URL of one blob with a service SAS that allows
// perms on it until expiry (for example Read, to hand a claim-check blob to
// a client, or Create|Write to let it upload one). The blob need not exist.
// The Account must have been opened with the account key.
func (a *Account) BlobSASURL(containerName, blobName string, perms BlobPermissions, expiry time.Time, opts *SASOptions) (_ string, err error) {
	defer func() { err = withOp("BlobSASURL", err) }()
	if err := validateContainerName(containerName); err != nil {
		return "", err
	}
	if blobName == "" || len(blobName) > 1024 {
		return "", sasError(containerName, "a blob name is 1-1024 characters, not %d", len(blobName))
	}
	if perms.List {
		return "", sasError(containerName+"/"+blobName, "List applies to containers; a blob SAS cannot list")
	}
	start, expiry, err := a.checkBlobSAS(containerName, perms, expiry, opts)
	if err != nil {
		return "", err
	}
	var o *blob.GetSASURLOptions
	if !start.IsZero() {
		o = &blob.GetSASURLOptions{StartTime: &start}
	}
	u, err := a.blobs.ServiceClient().NewContainerClient(containerName).NewBlobClient(blobName).GetSASURL(blobsas.BlobPermissions{
		Read: perms.Read, Add: perms.Add, Create: perms.Create, Write: perms.Write, Delete: perms.Delete,
	}, expiry, o)
	if err != nil {
		return "", sasError(containerName+"/"+blobName, "cannot sign the SAS: %s", redactSecretText(err.Error()))
	}
	return u, nil
}

func (a *Account) checkBlobSAS(resource string, perms BlobPermissions, expiry time.Time, opts *SASOptions) (time.Time, time.Time, error) {
	if opts == nil {
		opts = &SASOptions{}
	}
	if a.tableCred == nil {
		return time.Time{}, time.Time{}, needKey(resource)
	}
	if perms == (BlobPermissions{}) {
		return time.Time{}, time.Time{}, sasError(resource, "no permissions: set at least one of Read, Add, Create, Write, Delete, List")
	}
	return checkSASTimes(resource, opts.Start, expiry)
}

// SASClientOptions configures the clients that OpenTableSAS, OpenQueueSAS
// and OpenContainerSAS build. A nil *SASClientOptions means defaults.
type SASClientOptions struct {
	// Client configures the HTTP pipeline as for [Open]: retries,
	// transport, extra policies, logging and the Meter that counts the
	// requests. The endpoint settings are ignored (the URL names the
	// endpoint). nil means defaults.
	Client *Options
	// Table configures a Table from OpenTableSAS (for example its
	// Encryption); the table's name comes from the URL. nil means defaults.
	Table *TableOptions
}

// parsedSAS is a checked SAS URL.
type parsedSAS struct {
	endpoint string // service endpoint, without the resource or query
	resource string // the table, queue or container name
	token    string // the query string
	shown    string // the URL without its query, for messages
	account  string
}

// parseSASURL checks a SAS URL for a resource directly below the service
// endpoint. Errors never show the query string.
func parseSASURL(kind, sasURL string) (*parsedSAS, error) {
	u, err := url.Parse(sasURL)
	if err != nil {
		return nil, sasError("", "the %s SAS URL is not a valid URL", kind)
	}
	shown := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, sasError(shown, "the %s SAS URL must be an absolute http:// or https:// URL", kind)
	}
	q := u.Query()
	if q.Get("sig") == "" {
		return nil, sasError(shown, "the URL has no SAS token (no sig parameter)")
	}
	if q.Get("sv") == "" {
		return nil, sasError(shown, "the SAS token has no signed version (sv)")
	}
	if se := q.Get("se"); se != "" {
		if t, err := time.Parse(time.RFC3339, se); err == nil && !t.After(time.Now()) {
			return nil, sasError(shown, "the SAS expired at %s", t.UTC().Format(sasTimeFormat))
		}
	}
	path := strings.TrimRight(u.Path, "/")
	i := strings.LastIndexByte(path, '/')
	if i < 0 || path[i+1:] == "" {
		return nil, sasError(shown, "the URL does not name a %s (expected <endpoint>/<%s name>?<token>)", kind, kind)
	}
	p := &parsedSAS{
		endpoint: u.Scheme + "://" + u.Host + path[:i],
		resource: path[i+1:],
		token:    u.RawQuery,
		shown:    shown,
	}
	p.account = accountFromEndpoint(p.endpoint)
	return p, nil
}

// sasAccount returns an Account whose pipeline options are built from opts
// as Open builds them, with secrets scrubbed from transport errors.
func sasAccount(p *parsedSAS, opts *SASClientOptions, mk func(a *Account, table, queue, blob azcore.ClientOptions) error) error {
	var o Options
	if opts != nil && opts.Client != nil {
		o = *opts.Client
	}
	o.PerRetryPolicies = append(append([]policy.Policy(nil), o.PerRetryPolicies...), redactPolicy{})
	a := &Account{name: p.account, endpoints: endpointURLs{Table: p.endpoint, Queue: p.endpoint, Blob: p.endpoint}}
	err := a.build(&o, tablewire.NewSAS(p.token), func(table, queue, blob azcore.ClientOptions) error { return mk(a, table, queue, blob) })
	if err != nil {
		return sasError(p.shown, "cannot create the client: %s", redactSecretText(err.Error()))
	}
	return nil
}

// OpenTableSAS returns a Table for the table a SAS URL names (as made by
// [Account.TableSASURL]), for a client that holds no account key. The
// client can do what the token allows; outside its range or permissions
// the service answers 403 (an error matching none of the sentinels, that
// unwraps to *azcore.ResponseError). OpenTableSAS checks the URL and that
// the token has not expired; it does not contact the service.
func OpenTableSAS[T any](sasURL string, opts *SASClientOptions) (_ *Table[T], err error) {
	defer func() { err = withOp("OpenTableSAS", err) }()
	p, err := parseSASURL("table", sasURL)
	if err != nil {
		return nil, err
	}
	if err := validateTableName(p.resource); err != nil {
		return nil, err
	}
	if tn := p.tokenValue("tn"); tn != "" && !strings.EqualFold(tn, p.resource) {
		return nil, sasError(p.shown, "the SAS token is for table %q, not %q", tn, p.resource)
	}
	var acct *Account
	err = sasAccount(p, opts, func(a *Account, table, _, _ azcore.ClientOptions) (err error) {
		a.tables, err = aztables.NewServiceClientWithNoCredential(p.endpoint+"/?"+p.token, &aztables.ClientOptions{ClientOptions: table})
		acct = a
		return err
	})
	if err != nil {
		return nil, err
	}
	var to *TableOptions
	if opts != nil {
		to = opts.Table
	}
	return openTable[T](acct, p.resource, to)
}

// OpenQueueSAS returns a client for the queue a SAS URL names (as made by
// [Account.QueueSASURL]), for a client that holds no account key. It checks
// the URL and that the token has not expired; it does not contact the
// service.
func OpenQueueSAS(sasURL string, opts *SASClientOptions) (*azqueue.QueueClient, error) {
	return openSAS("OpenQueueSAS", "queue", sasURL, opts, validateQueueName,
		func(url string, _, queue, _ azcore.ClientOptions) (*azqueue.QueueClient, error) {
			return azqueue.NewQueueClientWithNoCredential(url, &azqueue.ClientOptions{ClientOptions: queue})
		})
}

// OpenContainerSAS returns a client for the blob container a SAS URL names
// (as made by [Account.ContainerSASURL]), for a client that holds no
// account key. It checks the URL and that the token has not expired; it
// does not contact the service.
func OpenContainerSAS(sasURL string, opts *SASClientOptions) (*container.Client, error) {
	return openSAS("OpenContainerSAS", "container", sasURL, opts, validateContainerName,
		func(url string, _, _, blob azcore.ClientOptions) (*container.Client, error) {
			return container.NewClientWithNoCredential(url, &container.ClientOptions{ClientOptions: blob})
		})
}

// openSAS checks a queue or container SAS URL (kind) and makes its client
// with mk, given the resource's URL with its token and the options of each
// service's client.
func openSAS[C any](op, kind, sasURL string, opts *SASClientOptions, validate func(string) error,
	mk func(url string, table, queue, blob azcore.ClientOptions) (C, error)) (_ C, err error) {
	defer func() { err = withOp(op, err) }()
	var c C
	p, err := parseSASURL(kind, sasURL)
	if err != nil {
		return c, err
	}
	if err := validate(p.resource); err != nil {
		return c, err
	}
	err = sasAccount(p, opts, func(_ *Account, table, queue, blob azcore.ClientOptions) (err error) {
		c, err = mk(p.endpoint+"/"+p.resource+"?"+p.token, table, queue, blob)
		return err
	})
	return c, err
}

func (p *parsedSAS) tokenValue(name string) string {
	q, _ := url.ParseQuery(p.token)
	return q.Get(name)
}

// redactPolicy scrubs SAS signatures from the URLs in transport errors
// (net/http's *url.Error shows the whole request URL), so that the errors
// of SAS clients can be logged.
type redactPolicy struct{}

func (redactPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redactURL(ue.URL)
		}
	}
	return resp, err
}

// redactURL replaces the value of a sig query parameter with REDACTED.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return redactSecretText(s)
	}
	q := u.Query()
	if q.Has("sig") {
		q.Set("sig", "REDACTED")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// redactSecretText cuts a message at the first sig= it contains.
func redactSecretText(msg string) string {
	if i := strings.Index(msg, "sig="); i >= 0 {
		msg = msg[:i] + "sig=REDACTED"
	}
	return msg
}

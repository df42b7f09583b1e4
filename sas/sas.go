// Package sas issues service shared access signatures (SAS) for tables,
// queues, blob containers and blobs, and opens a table, queue or container
// from a SAS URL. It is the design guide's valet key: a trusted service
// that holds the account key signs a token for exactly what a client may
// touch (one customer's partition of a table, adding messages to one
// queue, uploading to one container) and hands out its URL; the client
// opens the URL without any key, and the storage service enforces the
// token's scope.
//
//	signer, err := sas.NewSigner(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"))
//	u, err := signer.TableURL("Orders", sas.Permissions{Read: true, Add: true},
//		time.Now().Add(time.Hour), &sas.Options{StartPartitionKey: "alice", EndPartitionKey: "alice"})
//	// ... hand u to the client, which holds no key:
//	orders, err := sas.OpenTable[Order](u, nil, nil)
//
// # Table tokens
//
// aztables' SASSignatureValues signs a PartitionKey/RowKey range but leaves
// it out of the query string, so the service refuses its range tokens.
// [Signer.TableURL] builds the Table service's string-to-sign itself
// (version 2019-02-02: permissions, start, expiry,
// /table/<account>/<table>, identifier, IP, protocol, version, spk, srk,
// epk, erk) and puts every signed field in the token. Azurite checks the
// signature, range included, but does not enforce the range; Azure does:
// outside it a point read answers 404, a query is narrowed to the range
// and a write answers 403.
//
// # Secrets
//
// A SAS is a bearer secret until it expires: keep it short-lived and hand
// it out over HTTPS. A token for an https endpoint is valid over HTTPS only
// (spr=https). Nothing in this package puts a signature or the account key
// in an error: URL errors show the URL without its query, and the clients
// [OpenTable], [OpenQueue] and [OpenContainer] make replace the signature in
// the URL of a transport error with REDACTED before any of the caller's
// policies, the Meter or a log sees it. A [Signer] printed with fmt or
// log/slog shows no key.
//
// Errors are *[tablekit.ValidationError]s matching [tablekit.ErrInvalidInput]
// (or [tablekit.ErrInvalidKey] for a name or key bound the service would
// refuse); nothing is sent to check a token.
package sas

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	blobsas "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	queuesas "github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/sas"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/connstr"
	"github.com/tablekit/tablekit/internal/names"
	"github.com/tablekit/tablekit/keys"
)

// tableSASVersion is the signed version (sv) of table SAS tokens: the one
// aztables v1.4.1 uses (aztables.SASVersion), whose string-to-sign has the
// PartitionKey/RowKey range fields.
const tableSASVersion = "2019-02-02"

// timeFormat is how SAS start and expiry times are written.
const timeFormat = "2006-01-02T15:04:05Z"

// Permissions are the operations a token allows. Each kind of resource has
// its own subset, and a token that asks for one outside it is refused:
//
//	table      Read (query, get), Add (insert; upsert with Update),
//	           Update (update, merge; upsert with Add), Delete
//	queue      Read (peek, metadata), Add (put messages),
//	           Update (update messages, with Process), Process (get and delete)
//	container  Read, Add (append blocks), Create (new blobs only),
//	           Write (write and overwrite), Delete, List (list blobs)
//	blob       as a container, without List
type Permissions struct {
	Read, Add, Update, Delete, Process, Create, Write, List bool
}

// outside returns the names of the permissions p sets that are not in
// allowed (a permission name list).
func (p Permissions) outside(allowed ...string) []string {
	var bad []string
	for _, f := range []struct {
		on   bool
		name string
	}{{p.Read, "Read"}, {p.Add, "Add"}, {p.Update, "Update"}, {p.Delete, "Delete"},
		{p.Process, "Process"}, {p.Create, "Create"}, {p.Write, "Write"}, {p.List, "List"}} {
		if f.on && !slices.Contains(allowed, f.name) {
			bad = append(bad, f.name)
		}
	}
	return bad
}

// check refuses permissions that are empty or outside allowed for kind.
func (p Permissions) check(op, resource, kind string, allowed ...string) error {
	if p == (Permissions{}) {
		return invalid(op, resource, "no permissions: set at least one of %s", strings.Join(allowed, ", "))
	}
	if bad := p.outside(allowed...); len(bad) > 0 {
		return invalid(op, resource, "a %s SAS cannot grant %s (it grants %s)", kind, strings.Join(bad, ", "), strings.Join(allowed, ", "))
	}
	return nil
}

// Options refines a token. A nil *Options means valid from now and, for a
// table, the whole table.
type Options struct {
	// Start is when the token becomes valid; zero means at once. Set it a
	// few minutes in the past to allow for clock skew.
	Start time.Time

	// StartPartitionKey and StartRowKey are the first entity a table token
	// reaches, EndPartitionKey and EndRowKey the last (both inclusive).
	// Empty means unbounded; a row key bound needs the partition key bound
	// on the same side. StartPartitionKey == EndPartitionKey limits the
	// token to one partition. Tables only: other tokens refuse them.
	StartPartitionKey, StartRowKey string
	EndPartitionKey, EndRowKey     string
}

// hasRange reports whether o sets a key bound.
func (o *Options) hasRange() bool {
	return o.StartPartitionKey != "" || o.StartRowKey != "" || o.EndPartitionKey != "" || o.EndRowKey != ""
}

// Signer signs service SAS tokens with a storage account's key. Make one
// with [NewSigner]; it is safe for concurrent use, and signing does not
// contact the service. A Signer printed with fmt or log/slog shows the
// account name, never the key.
type Signer struct {
	account   string
	endpoints connstr.Endpoints
	// key returns the account key in base64, as the connection string
	// gave it. A function, so that fmt and log/slog print its address
	// rather than the key.
	key func() string
}

// NewSigner returns a Signer for the account a connection string names,
// which must hold the account key ("...;AccountName=...;AccountKey=...",
// or "UseDevelopmentStorage=true" for Azurite): a connection string with a
// SAS cannot sign. Errors name the setting at fault, never the key.
func NewSigner(connectionString string) (*Signer, error) {
	const op = "sas.NewSigner"
	cs, err := connstr.Parse(connectionString)
	if err != nil {
		return nil, invalid(op, "", "connection string: %v", err)
	}
	if cs.AccountKey == "" {
		return nil, invalid(op, "", "signing a service SAS needs the account key: the connection string has a SharedAccessSignature instead (a SAS cannot sign)")
	}
	key := cs.AccountKey // valid base64: connstr.Parse checked it
	return &Signer{account: cs.AccountName, endpoints: cs.Endpoints, key: func() string { return key }}, nil
}

// ready refuses a Signer not made by NewSigner.
func (s *Signer) ready(op, resource string) error {
	if s == nil || s.key == nil {
		return invalid(op, resource, "the Signer is not initialised: use sas.NewSigner")
	}
	return nil
}

// TableURL returns the URL of table with a service SAS that allows perms
// (Read, Add, Update, Delete) until expiry and, with opts, only within a
// PartitionKey/RowKey range (see the package doc). The client opens it
// with [OpenTable]. TableURL does not check that the table exists.
func (s *Signer) TableURL(table string, perms Permissions, expiry time.Time, opts *Options) (string, error) {
	const op = "sas.Signer.TableURL"
	if err := s.ready(op, table); err != nil {
		return "", err
	}
	if err := checkName(op, names.Table, table); err != nil {
		return "", err
	}
	if opts == nil {
		opts = &Options{}
	}
	v, err := s.tableValues(op, table, perms, expiry, opts)
	if err != nil {
		return "", err
	}
	return s.endpoints.Table + "/" + table + "?" + v.query(v.sign(s.key(), s.account)), nil
}

// tableValues checks a table SAS request and returns its signed fields.
func (s *Signer) tableValues(op, table string, perms Permissions, expiry time.Time, opts *Options) (*tableValues, error) {
	if err := perms.check(op, table, "table", "Read", "Add", "Update", "Delete"); err != nil {
		return nil, err
	}
	start, expiry, err := checkTimes(op, table, opts.Start, expiry)
	if err != nil {
		return nil, err
	}
	for _, k := range []struct{ name, value string }{
		{"StartPartitionKey", opts.StartPartitionKey}, {"StartRowKey", opts.StartRowKey},
		{"EndPartitionKey", opts.EndPartitionKey}, {"EndRowKey", opts.EndRowKey},
	} {
		if err := keys.Validate(k.value); err != nil {
			return nil, &tablekit.ValidationError{Op: op, Entity: table, Property: k.name, Detail: "SAS range: " + err.Error(), Err: tablekit.ErrInvalidKey}
		}
	}
	if opts.StartRowKey != "" && opts.StartPartitionKey == "" {
		return nil, invalid(op, table, "StartRowKey needs StartPartitionKey: a row key bound applies within the start partition")
	}
	if opts.EndRowKey != "" && opts.EndPartitionKey == "" {
		return nil, invalid(op, table, "EndRowKey needs EndPartitionKey: a row key bound applies within the end partition")
	}
	if opts.StartPartitionKey != "" && opts.EndPartitionKey != "" {
		c := keys.Compare(opts.StartPartitionKey, opts.EndPartitionKey)
		if c > 0 || (c == 0 && opts.StartRowKey != "" && opts.EndRowKey != "" && keys.Compare(opts.StartRowKey, opts.EndRowKey) > 0) {
			return nil, invalid(op, table, "the range is empty: its start is after its end")
		}
	}
	v := &tableValues{
		permissions: tablePermissions(perms),
		expiry:      expiry.Format(timeFormat),
		table:       table,
		version:     tableSASVersion,
		startPK:     opts.StartPartitionKey,
		startRK:     opts.StartRowKey,
		endPK:       opts.EndPartitionKey,
		endRK:       opts.EndRowKey,
	}
	if !start.IsZero() {
		v.start = start.Format(timeFormat)
	}
	if isHTTPS(s.endpoints.Table) {
		v.protocol = "https"
	}
	return v, nil
}

// QueueURL returns the URL of queue with a service SAS that allows perms
// (Read, Add, Update, Process) until expiry, for a client that opens it
// with [OpenQueue] (for example a producer that may only add messages).
// opts may set Start only.
func (s *Signer) QueueURL(queue string, perms Permissions, expiry time.Time, opts *Options) (string, error) {
	const op = "sas.Signer.QueueURL"
	if err := s.ready(op, queue); err != nil {
		return "", err
	}
	if err := checkName(op, names.Queue, queue); err != nil {
		return "", err
	}
	if err := perms.check(op, queue, "queue", "Read", "Add", "Update", "Process"); err != nil {
		return "", err
	}
	start, expiry, err := checkNonTable(op, queue, expiry, opts)
	if err != nil {
		return "", err
	}
	cred, err := azqueue.NewSharedKeyCredential(s.account, s.key())
	if err != nil {
		return "", invalid(op, queue, "cannot sign the SAS: the account key is not valid")
	}
	v := queuesas.QueueSignatureValues{
		Version:     queuesas.Version,
		StartTime:   start,
		ExpiryTime:  expiry,
		QueueName:   queue,
		Permissions: (&queuesas.QueuePermissions{Read: perms.Read, Add: perms.Add, Update: perms.Update, Process: perms.Process}).String(),
	}
	if isHTTPS(s.endpoints.Queue) {
		v.Protocol = queuesas.ProtocolHTTPS
	}
	q, err := v.SignWithSharedKey(cred)
	if err != nil {
		return "", invalid(op, queue, "cannot sign the SAS: %s", connstr.RedactText(err.Error()))
	}
	return s.endpoints.Queue + "/" + queue + "?" + q.Encode(), nil
}

// ContainerURL returns the URL of a blob container with a service SAS that
// allows perms (Read, Add, Create, Write, Delete, List) on its blobs until
// expiry, for a client that opens it with [OpenContainer]. opts may set
// Start only.
func (s *Signer) ContainerURL(container string, perms Permissions, expiry time.Time, opts *Options) (string, error) {
	const op = "sas.Signer.ContainerURL"
	if err := s.ready(op, container); err != nil {
		return "", err
	}
	if err := checkName(op, names.Container, container); err != nil {
		return "", err
	}
	if err := perms.check(op, container, "container", "Read", "Add", "Create", "Write", "Delete", "List"); err != nil {
		return "", err
	}
	q, err := s.signBlob(op, container, "", perms, expiry, opts)
	if err != nil {
		return "", err
	}
	return s.endpoints.Blob + "/" + container + "?" + q, nil
}

// BlobURL returns the URL of one blob with a service SAS that allows perms
// (Read, Add, Create, Write, Delete) on it until expiry: Read to hand a
// claim-check blob to a client, Create|Write to let it upload one. The
// blob need not exist. opts may set Start only.
func (s *Signer) BlobURL(container, blob string, perms Permissions, expiry time.Time, opts *Options) (string, error) {
	const op = "sas.Signer.BlobURL"
	if err := s.ready(op, container); err != nil {
		return "", err
	}
	if err := checkName(op, names.Container, container); err != nil {
		return "", err
	}
	if blob == "" || len(blob) > 1024 {
		return "", invalid(op, container, "a blob name is 1-1024 characters, not %d", len(blob))
	}
	if perms.List {
		return "", invalid(op, container+"/"+blob, "List applies to containers; a blob SAS cannot list")
	}
	if err := perms.check(op, container+"/"+blob, "blob", "Read", "Add", "Create", "Write", "Delete"); err != nil {
		return "", err
	}
	q, err := s.signBlob(op, container, blob, perms, expiry, opts)
	if err != nil {
		return "", err
	}
	// As azblob's container.Client.NewBlobClient addresses a blob.
	return s.endpoints.Blob + "/" + container + "/" + url.PathEscape(blob) + "?" + q, nil
}

// signBlob signs a container token (blob "") or a blob token.
func (s *Signer) signBlob(op, container, blob string, perms Permissions, expiry time.Time, opts *Options) (string, error) {
	resource := container
	if blob != "" {
		resource += "/" + blob
	}
	start, expiry, err := checkNonTable(op, resource, expiry, opts)
	if err != nil {
		return "", err
	}
	cred, err := azblob.NewSharedKeyCredential(s.account, s.key())
	if err != nil {
		return "", invalid(op, resource, "cannot sign the SAS: the account key is not valid")
	}
	v := blobsas.BlobSignatureValues{
		Version:       blobsas.Version,
		StartTime:     start,
		ExpiryTime:    expiry,
		ContainerName: container,
		BlobName:      blob,
	}
	if blob == "" {
		v.Permissions = (&blobsas.ContainerPermissions{Read: perms.Read, Add: perms.Add, Create: perms.Create, Write: perms.Write, Delete: perms.Delete, List: perms.List}).String()
	} else {
		v.Permissions = (&blobsas.BlobPermissions{Read: perms.Read, Add: perms.Add, Create: perms.Create, Write: perms.Write, Delete: perms.Delete}).String()
	}
	if isHTTPS(s.endpoints.Blob) {
		v.Protocol = blobsas.ProtocolHTTPS
	}
	q, err := v.SignWithSharedKey(cred)
	if err != nil {
		return "", invalid(op, resource, "cannot sign the SAS: %s", connstr.RedactText(err.Error()))
	}
	return q.Encode(), nil
}

// checkNonTable checks the options of a queue or blob token and its
// validity window.
func checkNonTable(op, resource string, expiry time.Time, opts *Options) (time.Time, time.Time, error) {
	if opts == nil {
		opts = &Options{}
	}
	if opts.hasRange() {
		return time.Time{}, time.Time{}, invalid(op, resource, "PartitionKey and RowKey bounds apply to table tokens only")
	}
	return checkTimes(op, resource, opts.Start, expiry)
}

// checkTimes checks a token's validity window and returns it in UTC,
// truncated to the second (the token's precision).
func checkTimes(op, resource string, start, expiry time.Time) (time.Time, time.Time, error) {
	if expiry.IsZero() {
		return start, expiry, invalid(op, resource, "the expiry time is required: a SAS cannot be revoked except by rotating the account key (or through a stored access policy), so it must expire")
	}
	expiry = expiry.UTC().Truncate(time.Second)
	if !start.IsZero() {
		start = start.UTC().Truncate(time.Second)
	}
	if !expiry.After(time.Now()) {
		return start, expiry, invalid(op, resource, "the expiry time %s is not in the future", expiry.Format(timeFormat))
	}
	if !start.IsZero() && !expiry.After(start) {
		return start, expiry, invalid(op, resource, "the expiry time %s is not after the start time %s", expiry.Format(timeFormat), start.Format(timeFormat))
	}
	return start, expiry, nil
}

func isHTTPS(endpoint string) bool { return strings.HasPrefix(endpoint, "https://") }

// invalid reports a SAS problem about resource. The message must not
// contain a secret.
func invalid(op, resource, format string, args ...any) error {
	return &tablekit.ValidationError{Op: op, Entity: resource, Property: "SAS", Detail: fmt.Sprintf(format, args...), Err: tablekit.ErrInvalidInput}
}

// checkName refuses a name the service would refuse (the rules of
// internal/names, which the root shares) with a *tablekit.ValidationError
// naming op that matches tablekit.ErrInvalidKey, as the root does.
func checkName(op string, check func(name string) (problem, rule string), name string) error {
	if problem, rule := check(name); problem != "" {
		return &tablekit.ValidationError{Op: op, Limit: rule, Detail: problem, Err: tablekit.ErrInvalidKey}
	}
	return nil
}

// tableValues are the signed fields of a table service SAS, as they appear
// in the string-to-sign and the query string.
type tableValues struct {
	permissions string // sp, canonical order
	start       string // st, timeFormat or ""
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

// tablePermissions returns the table permissions of p in the service's
// canonical order, e.g. "raud".
func tablePermissions(p Permissions) string {
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

// stringToSign returns the string a table SAS signature is the
// HMAC-SHA256 of (the Table service's format for version 2018-11-09 and
// later): the signed fields in this order, joined with newlines, with the
// canonical resource /table/<account>/<lowercase table name>.
func (v *tableValues) stringToSign(account string) string {
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

// sign returns the signature of v with the account key (base64):
// base64(HMAC-SHA256(key, string-to-sign)).
func (v *tableValues) sign(key, account string) string {
	k, _ := base64.StdEncoding.DecodeString(key) // checked by connstr.Parse
	h := hmac.New(sha256.New, k)
	clear(k)
	h.Write([]byte(v.stringToSign(account)))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// query returns the token: every signed field that is set, and sig.
func (v *tableValues) query(sig string) string {
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

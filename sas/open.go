package sas

import (
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/connstr"
	"github.com/tablekit/tablekit/internal/names"
)

// OpenTable returns a Table for the table a SAS URL names (as
// [Signer.TableURL] makes), for a client that holds no account key. opts
// configures the client as for [tablekit.Open] (retries, transport,
// policies, the Meter that counts its requests; nil means defaults) and
// tableOpts the Table as for [tablekit.OpenTable] (for example its
// Encryption); the table's name comes from the URL.
//
// The client can do what the token allows; outside its range or
// permissions the service refuses (403, an error matching none of
// tablekit's sentinels that unwraps to *azcore.ResponseError). OpenTable
// checks the URL and that the token has not expired; it does not contact
// the service.
func OpenTable[T any](sasURL string, opts *tablekit.Options, tableOpts *tablekit.TableOptions) (*tablekit.Table[T], error) {
	const op = "sas.OpenTable"
	p, err := parseURL(op, "table", sasURL)
	if err != nil {
		return nil, err
	}
	if err := checkName(op, names.Table, p.resource); err != nil {
		return nil, err
	}
	if tn := p.query.Get("tn"); tn != "" && !strings.EqualFold(tn, p.resource) {
		return nil, invalid(op, p.shown, "the SAS token is for table %q, not %q", tn, p.resource)
	}
	acct, err := p.open(op, opts)
	if err != nil {
		return nil, err
	}
	return tablekit.OpenTable[T](acct, p.resource, tableOpts)
}

// OpenQueue returns a client for the queue a SAS URL names (as
// [Signer.QueueURL] makes), for a client that holds no account key. opts
// configures the client as for [tablekit.Open]; nil means defaults.
// OpenQueue checks the URL and that the token has not expired; it does not
// contact the service.
func OpenQueue(sasURL string, opts *tablekit.Options) (*azqueue.QueueClient, error) {
	const op = "sas.OpenQueue"
	p, err := parseURL(op, "queue", sasURL)
	if err != nil {
		return nil, err
	}
	if err := checkName(op, names.Queue, p.resource); err != nil {
		return nil, err
	}
	acct, err := p.open(op, opts)
	if err != nil {
		return nil, err
	}
	return acct.Queues().NewQueueClient(p.resource), nil
}

// OpenContainer returns a client for the blob container a SAS URL names
// (as [Signer.ContainerURL] makes), for a client that holds no account
// key. opts configures the client as for [tablekit.Open]; nil means
// defaults. OpenContainer checks the URL and that the token has not
// expired; it does not contact the service.
func OpenContainer(sasURL string, opts *tablekit.Options) (*container.Client, error) {
	const op = "sas.OpenContainer"
	p, err := parseURL(op, "container", sasURL)
	if err != nil {
		return nil, err
	}
	if err := checkName(op, names.Container, p.resource); err != nil {
		return nil, err
	}
	acct, err := p.open(op, opts)
	if err != nil {
		return nil, err
	}
	return acct.Blobs().ServiceClient().NewContainerClient(p.resource), nil
}

// parsed is a checked SAS URL.
type parsed struct {
	endpoint string     // service endpoint, without the resource or query
	resource string     // the table, queue or container name
	token    string     // the query string, as given
	query    url.Values // the token, parsed
	shown    string     // the URL without its query, for messages
}

// parseURL checks a SAS URL for a resource (kind) directly below the
// service endpoint. Errors never show the query string.
func parseURL(op, kind, sasURL string) (*parsed, error) {
	u, err := url.Parse(sasURL)
	if err != nil {
		return nil, invalid(op, "", "the %s SAS URL is not a valid URL", kind)
	}
	shown := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, invalid(op, shown, "the %s SAS URL must be an absolute http:// or https:// URL", kind)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, invalid(op, shown, "the SAS token is not a valid query string")
	}
	if q.Get("sig") == "" {
		return nil, invalid(op, shown, "the URL has no SAS token (no sig parameter)")
	}
	if q.Get("sv") == "" {
		return nil, invalid(op, shown, "the SAS token has no signed version (sv)")
	}
	if se := q.Get("se"); se != "" {
		if t, err := time.Parse(time.RFC3339, se); err == nil && !t.After(time.Now()) {
			return nil, invalid(op, shown, "the SAS expired at %s", t.UTC().Format(timeFormat))
		}
	}
	path := strings.TrimRight(u.Path, "/")
	i := strings.LastIndexByte(path, '/')
	if i < 0 || path[i+1:] == "" {
		return nil, invalid(op, shown, "the URL does not name a %s (expected <endpoint>/<%s name>?<token>)", kind, kind)
	}
	p := &parsed{
		endpoint: u.Scheme + "://" + u.Host + path[:i],
		resource: path[i+1:],
		token:    u.RawQuery,
		query:    q,
		shown:    shown,
	}
	if strings.Contains(p.endpoint, ";") {
		// A connection string separates its settings with ';'.
		return nil, invalid(op, shown, "the endpoint must not contain ';'")
	}
	return p, nil
}

// open returns an Account for p's endpoint and token, made by tablekit.Open
// from a SAS connection string, every service at the URL's endpoint. A
// RedactPolicy after the caller's per-try policies keeps the signature out
// of the transport errors they, the Meter and the caller see.
func (p *parsed) open(op string, opts *tablekit.Options) (*tablekit.Account, error) {
	var o tablekit.Options
	if opts != nil {
		o = *opts
	}
	o.PerRetryPolicies = append(slices.Clone(o.PerRetryPolicies), connstr.RedactPolicy{})
	cs := "TableEndpoint=" + p.endpoint + ";QueueEndpoint=" + p.endpoint + ";BlobEndpoint=" + p.endpoint +
		";SharedAccessSignature=" + p.token // url.ParseQuery refused a ';' in it
	acct, err := tablekit.Open(cs, &o)
	if err != nil {
		return nil, invalid(op, p.shown, "cannot create the client: %s", connstr.RedactText(strings.ReplaceAll(err.Error(), p.token, "REDACTED")))
	}
	return acct, nil
}

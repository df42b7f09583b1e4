package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// SharedKey authorizes requests with a storage account's key, in the
// Table service's Shared Key scheme ("Authorize with Shared Key", section
// "Table service (Shared Key authorization)"):
//
//	StringToSign = VERB + "\n" +
//	               Content-MD5 + "\n" +
//	               Content-Type + "\n" +
//	               Date + "\n" +
//	               CanonicalizedResource
//
// where Date is the request's x-ms-date header, which the policy sets (the
// request carries no Date header; without x-ms-date, Date would be used) and CanonicalizedResource is "/" +
// account name + the request URL's path as sent (percent-encoded), + "?comp="
// + the comp parameter's value when the query has one. Unlike the Blob
// and Queue services' scheme, no x-ms- headers are signed. The header is
// "Authorization: SharedKey <account>:<base64 HMAC-SHA256 of StringToSign
// under the decoded key>".
//
// A SharedKey is a policy.Policy: install it as a per-retry policy, so that
// every try is signed with a fresh date after every policy that changes
// the request. It is safe for concurrent use.
type SharedKey struct {
	account string
	macs    sync.Pool        // of hash.Hash: HMAC-SHA256 under the key
	now     func() time.Time // nil: time.Now (tests set it)
}

// NewSharedKey returns the Shared Key policy of account, whose key is given
// base64-encoded, as the Azure portal shows it. It fails, without echoing
// the key, when the key is not valid base64.
func NewSharedKey(account, key string) (*SharedKey, error) {
	raw, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(raw) == 0 {
		return nil, errors.New("the account key is not valid base64")
	}
	k := &SharedKey{account: account}
	k.macs.New = func() any { return hmac.New(sha256.New, raw) }
	return k, nil
}

// Do signs the request and sends it on.
func (k *SharedKey) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	now := time.Now
	if k.now != nil {
		now = k.now
	}
	raw.Header.Set("x-ms-date", now().UTC().Format(http.TimeFormat))
	raw.Header.Set("Authorization", "SharedKey "+k.account+":"+k.sign(stringToSign(k.account, raw)))
	return req.Next()
}

// sign returns the base64 HMAC-SHA256 of s under the key.
func (k *SharedKey) sign(s string) string {
	mac := k.macs.Get().(hash.Hash)
	mac.Reset()
	mac.Write([]byte(s))
	var sum [sha256.Size]byte
	sig := base64.StdEncoding.EncodeToString(mac.Sum(sum[:0]))
	k.macs.Put(mac)
	return sig
}

// stringToSign is the Table service's Shared Key string-to-sign of req for
// account (see SharedKey).
func stringToSign(account string, req *http.Request) string {
	date := req.Header.Get("x-ms-date")
	if date == "" {
		date = req.Header.Get("Date")
	}
	var b strings.Builder
	b.Grow(128)
	b.WriteString(req.Method)
	b.WriteByte('\n')
	b.WriteString(req.Header.Get("Content-MD5"))
	b.WriteByte('\n')
	b.WriteString(req.Header.Get("Content-Type"))
	b.WriteByte('\n')
	b.WriteString(date)
	b.WriteByte('\n')
	b.WriteByte('/')
	b.WriteString(account)
	path := req.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.WriteString(path)
	if comp, ok := compParam(req.URL.RawQuery); ok {
		b.WriteString("?comp=")
		b.WriteString(comp)
	}
	return b.String()
}

// compParam returns the value of the comp query parameter, if any. Most
// requests have no query or a query without comp: it avoids parsing them.
func compParam(rawQuery string) (string, bool) {
	if !strings.Contains(rawQuery, "comp=") {
		return "", false
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil || !q.Has("comp") {
		return "", false
	}
	return q.Get("comp"), true
}

// SAS authorizes requests with a shared access signature: it appends the
// token (a query string without '?', e.g. "sv=...&sig=...") to every
// request's query. Install it as a per-retry policy.
type SAS struct{ token string }

// NewSAS returns the policy that appends token to every request.
func NewSAS(token string) *SAS { return &SAS{token: strings.TrimPrefix(token, "?")} }

// Do appends the token and sends the request on.
func (s *SAS) Do(req *policy.Request) (*http.Response, error) {
	u := req.Raw().URL
	if u.RawQuery == "" {
		u.RawQuery = s.token
	} else {
		u.RawQuery += "&" + s.token
	}
	return req.Next()
}

// TokenScope returns the scope of the Microsoft Entra ID tokens a table
// endpoint accepts: Azure Storage's for Table storage (the same in every
// cloud), Azure Cosmos DB's of the endpoint's cloud for Cosmos DB for Table.
// Use it with azcore's runtime.NewBearerTokenPolicy.
func TokenScope(endpoint string) string {
	host := endpoint
	if u, err := url.Parse(endpoint); err == nil {
		host = strings.ToLower(u.Hostname())
	}
	switch {
	case strings.HasSuffix(host, ".cosmos.azure.cn") || strings.HasSuffix(host, ".cosmosdb.azure.cn"):
		return "https://cosmos.azure.cn/.default"
	case strings.HasSuffix(host, ".cosmos.azure.us") || strings.HasSuffix(host, ".cosmosdb.azure.us"):
		return "https://cosmos.azure.us/.default"
	case strings.HasSuffix(host, ".cosmos.azure.com") || strings.HasSuffix(host, ".cosmosdb.azure.com"):
		return "https://cosmos.azure.com/.default"
	}
	return "https://storage.azure.com/.default"
}

// Package connstr parses Azure Storage connection strings, for the root
// package's Open and for package sas's Signer, and keeps the secrets they
// hold (an account key, a SAS signature) out of messages: [Parse]'s errors
// never contain one, [String.Redact] removes them from a text, and
// [RedactPolicy] scrubs a signature from the URL of a transport error.
//
// It depends on nothing of tablekit's: its errors are plain, and the
// callers wrap them with the sentinel their package documents
// (tablekit.ErrInvalidInput).
package connstr

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Well-known settings of the local storage emulator (Azurite).
const (
	DevAccountName = "devstoreaccount1"
	DevAccountKey  = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Endpoints are the service URLs a connection string names, without a
// trailing slash. Its fields are those of the root's endpointURLs (an
// Account's endpoints), so that one converts to the other.
type Endpoints struct {
	Table, Queue, Blob string
}

// String is a parsed connection string.
type String struct {
	AccountName string
	AccountKey  string // base64, as given; "" with a SAS
	SAS         string // the query string without '?'; "" with a key
	Endpoints   Endpoints
}

// problem is an error of Parse: a message that holds no secret.
func problem(format string, args ...any) error { return fmt.Errorf(format, args...) }

// settings are the settings a storage connection string may have, by
// lower-case name.
var settings = map[string]string{
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

// Parse parses and checks a storage connection string. Its error says
// which setting is at fault and never shows a key or a signature.
func Parse(s string) (*String, error) {
	if strings.TrimSpace(s) == "" {
		return nil, problem(`it is empty (set AZURE_STORAGE_CONNECTION_STRING, or use "UseDevelopmentStorage=true" for a local Azurite)`)
	}
	set := map[string]string{}
	for i, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			// Do not echo the part: it may be a pasted key.
			return nil, problem("part %d is not of the form Name=value (parts are separated by ';')", i+1)
		}
		canon, known := settings[strings.ToLower(name)]
		if !known {
			if isPlainName(name) {
				return nil, problem("unknown setting %q", name)
			}
			return nil, problem("part %d has an unknown setting name", i+1)
		}
		if _, dup := set[canon]; dup {
			return nil, problem("%s is set twice", canon)
		}
		set[canon] = strings.TrimSpace(value)
	}
	if len(set) == 0 {
		return nil, problem(`it has no settings (set AZURE_STORAGE_CONNECTION_STRING, or use "UseDevelopmentStorage=true" for a local Azurite)`)
	}

	if v, ok := set["UseDevelopmentStorage"]; ok {
		if !strings.EqualFold(v, "true") {
			return nil, problem(`UseDevelopmentStorage must be "true", not %q`, v)
		}
		for name := range set {
			if name != "UseDevelopmentStorage" {
				return nil, problem("UseDevelopmentStorage=true cannot be combined with %s", name)
			}
		}
		return &String{
			AccountName: DevAccountName,
			AccountKey:  DevAccountKey,
			Endpoints: Endpoints{
				Table: "http://127.0.0.1:10002/" + DevAccountName,
				Queue: "http://127.0.0.1:10001/" + DevAccountName,
				Blob:  "http://127.0.0.1:10000/" + DevAccountName,
			},
		}, nil
	}
	if _, ok := set["DevelopmentStorageProxyUri"]; ok {
		return nil, problem("DevelopmentStorageProxyUri is only valid with UseDevelopmentStorage=true, which tablekit does not combine with a proxy")
	}

	cs := &String{AccountName: set["AccountName"]}
	if cs.AccountName != "" {
		if p := AccountNameProblem(cs.AccountName); p != "" {
			return nil, problem("AccountName: %s", p)
		}
	}
	key, hasKey := set["AccountKey"]
	sas, hasSAS := set["SharedAccessSignature"]
	switch {
	case hasKey:
		if key == "" {
			return nil, problem("AccountKey is empty")
		}
		if _, err := base64.StdEncoding.DecodeString(key); err != nil {
			return nil, problem("AccountKey is not valid base64 (copy the whole key, including any trailing '=')")
		}
		if cs.AccountName == "" {
			return nil, problem("missing AccountName (required with AccountKey)")
		}
		cs.AccountKey = key
	case hasSAS:
		sas = strings.TrimPrefix(sas, "?")
		q, err := url.ParseQuery(sas)
		if err != nil {
			return nil, problem("SharedAccessSignature is not a valid query string")
		}
		if q.Get("sig") == "" {
			return nil, problem("SharedAccessSignature has no sig parameter")
		}
		cs.SAS = sas
	case cs.AccountName != "":
		return nil, problem("missing AccountKey (or SharedAccessSignature) for account %q", cs.AccountName)
	default:
		return nil, problem("missing AccountName and AccountKey (or UseDevelopmentStorage=true)")
	}

	protocol := "https"
	if p, ok := set["DefaultEndpointsProtocol"]; ok {
		protocol = strings.ToLower(p)
		if protocol != "http" && protocol != "https" {
			return nil, problem("DefaultEndpointsProtocol must be http or https, not %q", p)
		}
	}
	suffix := "core.windows.net"
	if v, ok := set["EndpointSuffix"]; ok {
		if v == "" || strings.ContainsAny(v, "/:?#@ ") {
			return nil, problem("EndpointSuffix %q must be a DNS suffix such as core.windows.net", v)
		}
		suffix = v
	}
	for _, svc := range []struct {
		setting, sub string
		target       *string
	}{
		{"TableEndpoint", "table", &cs.Endpoints.Table},
		{"QueueEndpoint", "queue", &cs.Endpoints.Queue},
		{"BlobEndpoint", "blob", &cs.Endpoints.Blob},
	} {
		if v, ok := set[svc.setting]; ok {
			ep, p := CheckEndpoint(svc.setting, v)
			if p != "" {
				return nil, errors.New(p)
			}
			*svc.target = ep
			continue
		}
		if cs.AccountName == "" {
			return nil, problem("missing %s (needed when there is no AccountName to derive it from)", svc.setting)
		}
		*svc.target = protocol + "://" + cs.AccountName + "." + svc.sub + "." + suffix
	}
	if cs.AccountName == "" {
		cs.AccountName = AccountFromEndpoint(cs.Endpoints.Table)
	}
	return cs, nil
}

// CheckEndpoint checks an explicit service endpoint and returns it without
// a trailing slash, or a description of what is wrong with it. The
// description names the setting but shows the URL only without its query,
// which may hold a SAS.
func CheckEndpoint(setting, v string) (endpoint, problem string) {
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

// AccountNameProblem says what is wrong with a storage account name, or
// returns "".
func AccountNameProblem(name string) string {
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

// AccountFromEndpoint guesses the account name from a service URL: the
// first path segment of an IP-style (Azurite) URL, else the first label of
// the host.
func AccountFromEndpoint(ep string) string {
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

// Redact removes the key and the SAS of cs from msg, and cuts it at any
// other sig= it contains.
func (cs *String) Redact(msg string) string {
	for _, secret := range []string{cs.AccountKey, cs.SAS} {
		if secret != "" {
			msg = strings.ReplaceAll(msg, secret, "REDACTED")
		}
	}
	return RedactText(msg)
}

// RedactText cuts a message at the first sig= it contains.
func RedactText(msg string) string {
	if i := strings.Index(msg, "sig="); i >= 0 {
		msg = msg[:i] + "sig=REDACTED"
	}
	return msg
}

// RedactURL replaces the value of a sig query parameter with REDACTED.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return RedactText(s)
	}
	q := u.Query()
	if q.Has("sig") {
		q.Set("sig", "REDACTED")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// RedactPolicy is an azcore per-retry policy that scrubs SAS signatures
// from the URLs in transport errors (net/http's *url.Error shows the whole
// request URL), so that the errors of SAS clients can be logged.
type RedactPolicy struct{}

// Do sends the request and redacts the URL of a transport error.
func (RedactPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = RedactURL(ue.URL)
		}
	}
	return resp, err
}

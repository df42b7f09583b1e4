// Package replay reads the Azure SDKs' recordings of the live Table service
// and Azure Cosmos DB for Table (testdata/recordings, from
// Azure/azure-sdk-assets) and answers from them, for tests that check
// tablekit and package azurite's front against what the live services
// did. It is test support: nothing outside tests imports it.
//
// A recording is the test proxy's JSON: {"Entries": [{RequestUri,
// RequestMethod, RequestHeaders, RequestBody, StatusCode, ResponseHeaders,
// ResponseBody}, ...]}. Bodies are stored as JSON (an entity, an error),
// as one base64 string (a multipart $batch body, Go and .NET proxies), or
// as a list of lines whose binary segments are "b64:..." (Python proxy);
// [Load] turns each into the bytes that went over the wire, keeping JSON
// text as recorded (number tokens such as 9.2233720368547758E+21 or 1.0
// are not reformatted).
//
// [NewServer] answers a sequence of entries in order and checks that each
// request is the recorded one ([CompareRequest]: method, path, query and,
// normalised, the entity's properties and EDM types, part by part for a
// $batch). The Compare* functions and [Normalize] serve tests that compare
// another server's answers (package azurite's front) with the recordings.
package replay

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Entry is one recorded exchange.
type Entry struct {
	// Method is the request's HTTP method as sent (a tunnelled merge is a
	// POST with an X-HTTP-Method header).
	Method string
	// URL is the request's URL as recorded (its host is the recording's
	// account, often sanitized).
	URL *url.URL
	// RequestHeader and RequestBody are the request's headers and body
	// (nil for none).
	RequestHeader http.Header
	RequestBody   []byte
	// Status, ResponseHeader and ResponseBody are the answer.
	Status         int
	ResponseHeader http.Header
	ResponseBody   []byte
	// ResponseLines says the recording stored the answer's body as a list
	// of lines (the Python test proxy), whose line ends may be the
	// proxy's rather than the service's.
	ResponseLines bool
}

// Recording is a recorded test run.
type Recording struct {
	// Path is the file it was read from.
	Path string
	// Entries are its exchanges, in the order they happened.
	Entries []Entry
}

// Dir returns the path of the module's testdata/recordings folder, found
// from this source file, so tests of any package can load recordings.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "recordings")
}

// Load reads the recording at path; a relative path is taken from [Dir].
func Load(path string) (*Recording, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(Dir(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Entries []struct {
			RequestURI      string                     `json:"RequestUri"`
			RequestMethod   string                     `json:"RequestMethod"`
			RequestHeaders  map[string]json.RawMessage `json:"RequestHeaders"`
			RequestBody     json.RawMessage            `json:"RequestBody"`
			StatusCode      int                        `json:"StatusCode"`
			ResponseHeaders map[string]json.RawMessage `json:"ResponseHeaders"`
			ResponseBody    json.RawMessage            `json:"ResponseBody"`
		} `json:"Entries"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("replay: %s: %w", path, err)
	}
	rec := &Recording{Path: path}
	for i, e := range doc.Entries {
		u, err := url.Parse(e.RequestURI)
		if err != nil {
			return nil, fmt.Errorf("replay: %s: entry %d: %w", path, i, err)
		}
		entry := Entry{Method: e.RequestMethod, URL: u, Status: e.StatusCode}
		if entry.RequestHeader, err = headers(e.RequestHeaders); err == nil {
			entry.ResponseHeader, err = headers(e.ResponseHeaders)
		}
		if err == nil {
			entry.RequestBody, err = body(e.RequestBody)
		}
		if err == nil {
			entry.ResponseBody, err = body(e.ResponseBody)
			entry.ResponseLines = len(bytes.TrimSpace(e.ResponseBody)) > 0 && bytes.TrimSpace(e.ResponseBody)[0] == '['
		}
		if err != nil {
			return nil, fmt.Errorf("replay: %s: entry %d: %w", path, i, err)
		}
		rec.Entries = append(rec.Entries, entry)
	}
	return rec, nil
}

// headers reads recorded headers, whose values are a string or a list.
func headers(m map[string]json.RawMessage) (http.Header, error) {
	h := http.Header{}
	for k, raw := range m {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			h.Add(k, one)
			continue
		}
		var many []string
		if err := json.Unmarshal(raw, &many); err != nil {
			return nil, fmt.Errorf("header %s: %w", k, err)
		}
		for _, v := range many {
			h.Add(k, v)
		}
	}
	return h, nil
}

// body reads a recorded body: null (none), a JSON object (kept as
// recorded), a base64 string, or a list of lines with "b64:" segments.
func body(raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0, string(raw) == "null":
		return nil, nil
	case raw[0] == '{':
		return []byte(raw), nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			return b, nil
		}
		return []byte(s), nil
	case raw[0] == '[':
		var lines []string
		if err := json.Unmarshal(raw, &lines); err != nil {
			return nil, err
		}
		var out []byte
		for _, l := range lines {
			if rest, ok := strings.CutPrefix(l, "b64:"); ok {
				b, err := base64.StdEncoding.DecodeString(rest)
				if err != nil {
					return nil, err
				}
				out = append(out, b...)
				continue
			}
			out = append(out, l...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("a body that is neither JSON, base64 nor lines: %.40s", raw)
}

// Select returns the entries at the given indexes, in that order.
func (r *Recording) Select(idx ...int) []Entry {
	out := make([]Entry, 0, len(idx))
	for _, i := range idx {
		out = append(out, r.Entries[i])
	}
	return out
}

// EntityEntries returns the entries that address entities or $batch:
// every entry but the table administration (/Tables) ones.
func (r *Recording) EntityEntries() []Entry {
	var out []Entry
	for _, e := range r.Entries {
		if !IsTableAdmin(e.URL) {
			out = append(out, e)
		}
	}
	return out
}

// IsTableAdmin reports whether u addresses the Tables collection (create,
// list or delete a table) rather than entities.
func IsTableAdmin(u *url.URL) bool {
	p := u.EscapedPath()
	p = p[strings.LastIndexByte(p, '/')+1:]
	return p == "Tables" || strings.HasPrefix(p, "Tables(")
}

package wire

import (
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// crlf writes a multipart answer with the CRLF line ends Azure sends.
func crlf(lines ...string) []byte {
	return []byte(strings.Join(lines, "\r\n"))
}

// Answers in the format the Table service documents for entity group
// transactions and sends (the shapes of answers recorded from Azure by
// public SDK test suites), and in Azurite's. Azurite is tested end to end
// elsewhere; these are the forms no local service produces.
func TestParseBatchResponseAzureFormats(t *testing.T) {
	azureSuccess := crlf(
		"--batchresponse_4c637ba4-b2e8-40f8-adb2-b2c5b3f2b4a3",
		"Content-Type: multipart/mixed; boundary=changesetresponse_fe5d9e27-a4b1-4e3b-8e5f-0c3b3f0a1f2a",
		"",
		"--changesetresponse_fe5d9e27-a4b1-4e3b-8e5f-0c3b3f0a1f2a",
		"Content-Type: application/http",
		"Content-Transfer-Encoding: binary",
		"",
		"HTTP/1.1 204 No Content",
		"Content-ID: 1",
		"X-Content-Type-Options: nosniff",
		"Cache-Control: no-cache",
		"Preference-Applied: return-no-content",
		"DataServiceVersion: 3.0;",
		"Location: https://myaccount.table.core.windows.net/Blogs(PartitionKey='Channel_19',RowKey='1')",
		"DataServiceId: https://myaccount.table.core.windows.net/Blogs(PartitionKey='Channel_19',RowKey='1')",
		`ETag: W/"datetime'2024-01-31T10%3A28%3A02.5907425Z'"`,
		"",
		"",
		"--changesetresponse_fe5d9e27-a4b1-4e3b-8e5f-0c3b3f0a1f2a",
		"Content-Type: application/http",
		"Content-Transfer-Encoding: binary",
		"",
		"HTTP/1.1 204 No Content",
		"Content-ID: 2",
		"X-Content-Type-Options: nosniff",
		"Cache-Control: no-cache",
		"DataServiceVersion: 1.0;",
		"",
		"",
		"--changesetresponse_fe5d9e27-a4b1-4e3b-8e5f-0c3b3f0a1f2a",
		"Content-Type: application/http",
		"Content-Transfer-Encoding: binary",
		"",
		"HTTP/1.1 204 No Content",
		"Content-ID: 3",
		"X-Content-Type-Options: nosniff",
		"Cache-Control: no-cache",
		"DataServiceVersion: 1.0;",
		`ETag: W/"datetime'2024-01-31T10%3A28%3A02.5917425Z'"`,
		"",
		"",
		"--changesetresponse_fe5d9e27-a4b1-4e3b-8e5f-0c3b3f0a1f2a--",
		"--batchresponse_4c637ba4-b2e8-40f8-adb2-b2c5b3f2b4a3--",
		"")
	out, ok := ParseBatchResponse(azureSuccess, 3)
	want := []azcore.ETag{
		`W/"datetime'2024-01-31T10%3A28%3A02.5907425Z'"`,
		"", // the delete
		`W/"datetime'2024-01-31T10%3A28%3A02.5917425Z'"`,
	}
	if !ok || out.Failed || len(out.ETags) != 3 {
		t.Fatalf("success: ok=%v %+v", ok, out)
	}
	for i := range want {
		if out.ETags[i] != want[i] {
			t.Errorf("success: ETag %d = %q, want %q", i, out.ETags[i], want[i])
		}
	}
	if _, ok := ParseBatchResponse(azureSuccess, 4); ok {
		t.Error("an answer with 3 parts was accepted for 4 actions")
	}

	failure := func(contentID string) []byte {
		lines := []string{
			"--batchresponse_b6f890b8-8144-46d3-8574-f09db410f594",
			"Content-Type: multipart/mixed; boundary=changesetresponse_36817914-a3a0-43bb-9d66-8d670962fa3a",
			"",
			"--changesetresponse_36817914-a3a0-43bb-9d66-8d670962fa3a",
			"Content-Type: application/http",
			"Content-Transfer-Encoding: binary",
			"",
			"HTTP/1.1 409 Conflict",
		}
		if contentID != "" {
			lines = append(lines, "Content-ID: "+contentID)
		}
		lines = append(lines,
			"X-Content-Type-Options: nosniff",
			"Cache-Control: no-cache",
			"Preference-Applied: return-no-content",
			"DataServiceVersion: 3.0;",
			"Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
			"",
			`{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"1:The specified entity already exists.\nRequestId:8c9d6308-c002-0029-50b6-abde07000000\nTime:2020-10-26T16:41:38.2990653Z"}}}`,
			"--changesetresponse_36817914-a3a0-43bb-9d66-8d670962fa3a--",
			"--batchresponse_b6f890b8-8144-46d3-8574-f09db410f594--",
			"")
		return crlf(lines...)
	}
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"index in the message", failure("")},
		// When the message names the index, a Content-ID does not override it.
		{"index in the message and a Content-ID", failure("1")},
	} {
		out, ok := ParseBatchResponse(tc.body, 2)
		if !ok || !out.Failed || out.Status != 409 || out.Code != "EntityAlreadyExists" || out.Index != 1 {
			t.Errorf("%s: ok=%v %+v, want action 1 failed with 409 EntityAlreadyExists", tc.name, ok, out)
		}
	}

	// A message without an index (a failure of the whole changeset): the
	// Content-ID names the action (1-based) when present, else no index.
	noIndex := strings.Replace(string(failure("2")), `"value":"1:The specified`, `"value":"The specified`, 1)
	if out, ok := ParseBatchResponse([]byte(noIndex), 2); !ok || out.Index != 1 || out.Code != "EntityAlreadyExists" {
		t.Errorf("Content-ID only: ok=%v %+v, want index 1", ok, out)
	}
	noIndex = strings.Replace(string(failure("")), `"value":"1:The specified`, `"value":"The specified`, 1)
	if out, ok := ParseBatchResponse([]byte(noIndex), 2); !ok || out.Index != -1 || !out.Failed {
		t.Errorf("no index at all: ok=%v %+v, want index -1", ok, out)
	}
	// A Content-ID outside the transaction names nothing.
	if out, ok := ParseBatchResponse([]byte(strings.Replace(noIndex, "HTTP/1.1 409 Conflict", "HTTP/1.1 409 Conflict\r\nContent-ID: 9", 1)), 2); !ok || out.Index != -1 {
		t.Errorf("Content-ID 9 of 2: ok=%v %+v, want index -1", ok, out)
	}

	// The whole answer an error without a multipart body (the service
	// refused the request itself, e.g. 413): not a batch answer.
	if _, ok := ParseBatchResponse([]byte(`{"odata.error":{"code":"RequestBodyTooLarge","message":{"lang":"en-US","value":"The request body is too large."}}}`), 2); ok {
		t.Error("a plain OData error was read as a batch answer")
	}
	// Truncated answers are not understood, and do not panic.
	for n := range len(azureSuccess) {
		ParseBatchResponse(azureSuccess[:n], 3)
	}
}

// TestParseBatchErrorJSONWhitespace: an OData error laid out with the
// whitespace JSON allows (as the SDKs' test proxies store the services'
// answers) reads as the compact one does.
func TestParseBatchErrorJSONWhitespace(t *testing.T) {
	for _, body := range []string{
		`{"odata.error":{"code":"InvalidDuplicateRow","message":{"lang":"en-us","value":"3:The batch request contains multiple changes with same row key."}}}`,
		"{\n  \"odata.error\": {\n    \"code\": \"InvalidDuplicateRow\",\n    \"message\": {\"lang\": \"en-us\", \"value\": \"3:The batch request contains multiple changes with same row key.\"}\n  }\n}",
	} {
		status, code, index := parseBatchError([]byte(body))
		if status != 400 || code != "InvalidDuplicateRow" || index != 3 {
			t.Errorf("%q: status %d, code %q, index %d; want 400 InvalidDuplicateRow 3", body, status, code, index)
		}
	}
}

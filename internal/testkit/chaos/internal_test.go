package chaos

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

func TestErrorResponseTable(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://127.0.0.1:1/devstoreaccount1/t(PartitionKey='p',RowKey='r')", nil)
	req.Header.Set("x-ms-version", "2019-02-02")
	resp := errorResponse(req, "table", 503, "ServerBusy", serverBusyMessage, "0000-1")
	if resp.StatusCode != 503 || resp.Header.Get("x-ms-error-code") != "ServerBusy" || resp.Header.Get("x-ms-version") != "2019-02-02" {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json;odata=") {
		t.Errorf("Content-Type %q", ct)
	}
	body, _ := io.ReadAll(resp.Body)
	var got struct {
		Err struct {
			Code    string `json:"code"`
			Message struct {
				Lang  string `json:"lang"`
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if got.Err.Code != "ServerBusy" || got.Err.Message.Lang != "en-US" ||
		!strings.HasPrefix(got.Err.Message.Value, serverBusyMessage+"\nRequestId:0000-1\nTime:") {
		t.Errorf("body %s", body)
	}
}

func TestErrorResponseQueueAndBlob(t *testing.T) {
	for _, service := range []string{"queue", "blob"} {
		req, _ := http.NewRequest("GET", "http://127.0.0.1:1/devstoreaccount1/q/messages", nil)
		resp := errorResponse(req, service, 500, "OperationTimedOut", timedOutMessage, "id")
		body, _ := io.ReadAll(resp.Body)
		var got struct {
			XMLName xml.Name `xml:"Error"`
			Code    string   `xml:"Code"`
			Message string   `xml:"Message"`
		}
		if err := xml.Unmarshal(body, &got); err != nil {
			t.Fatalf("%s: body %s: %v", service, body, err)
		}
		if got.Code != "OperationTimedOut" || !strings.HasPrefix(got.Message, timedOutMessage+"\nRequestId:id\nTime:") ||
			resp.StatusCode != 500 || resp.Header.Get("Content-Type") != "application/xml" {
			t.Errorf("%s: %d %v %s", service, resp.StatusCode, resp.Header, body)
		}
	}
	head, _ := http.NewRequest("HEAD", "http://127.0.0.1:1/devstoreaccount1/c/b", nil)
	if resp := errorResponse(head, "blob", 503, "ServerBusy", serverBusyMessage, "id"); resp.ContentLength != 0 {
		t.Errorf("HEAD answer has a %d-byte body", resp.ContentLength)
	}
}

// The SDK finds the error code in the body alone, as it must for a
// service version that sends no x-ms-error-code header.
func TestErrorResponseBodyReadBySDK(t *testing.T) {
	for _, service := range []string{"table", "queue"} {
		req, _ := http.NewRequest("GET", "http://127.0.0.1:1/devstoreaccount1/x", nil)
		resp := errorResponse(req, service, 503, "ServerBusy", serverBusyMessage, "id")
		resp.Header.Del("x-ms-error-code")
		var re *azcore.ResponseError
		if err := runtime.NewResponseError(resp); !errors.As(err, &re) || re.ErrorCode != "ServerBusy" || re.StatusCode != 503 {
			t.Errorf("%s: %v", service, err)
		}
	}
}

func TestNormalPath(t *testing.T) {
	cases := []struct{ service, path, want string }{
		{"table", "/tChaos1abc(PartitionKey='p',RowKey='r')", "/_(PartitionKey='p',RowKey='r')"},
		{"table", "/tChaos1abc", "/_"},
		{"table", "/tChaos1abc()", "/_()"},
		{"table", "/$batch", "/$batch"},
		{"table", "/Tables", "/Tables"},
		{"table", "/Tables('tChaos1abc')", "/Tables(_)"},
		{"queue", "/t-q-abc/messages", "/_/messages"},
		{"queue", "/t-q-abc/messages/1f6c-9e", "/_/messages/_"},
		{"blob", "/t-c-abc/dir/a.log", "/_/dir/a.log"},
		{"blob", "/", "/"},
	}
	for _, c := range cases {
		if got := normalPath(c.service, c.path); got != c.want {
			t.Errorf("normalPath(%s, %s) = %s, want %s", c.service, c.path, got, c.want)
		}
	}
}

func TestLocate(t *testing.T) {
	inj, _ := New(1, nil)
	p := inj.Policy(Endpoints{
		Table: "http://127.0.0.1:10002/devstoreaccount1",
		Queue: "http://127.0.0.1:10001/devstoreaccount1",
		Blob:  "http://127.0.0.1:10000/devstoreaccount1",
	}).(*faultPolicy)
	cases := []struct{ url, service, path string }{
		{"http://127.0.0.1:10002/devstoreaccount1/t(PartitionKey='p',RowKey='r')", "table", "/t(PartitionKey='p',RowKey='r')"},
		{"http://127.0.0.1:10001/devstoreaccount1/q/messages", "queue", "/q/messages"},
		{"http://127.0.0.1:10000/devstoreaccount1/c/b", "blob", "/c/b"},
		{"http://127.0.0.1:10000/devstoreaccount10/c", "", "/devstoreaccount10/c"},
		{"https://acct.queue.core.windows.net/q", "queue", "/q"},
		{"https://example.com/x", "", "/x"},
	}
	for _, c := range cases {
		u, _ := url.Parse(c.url)
		if service, path := p.locate(u); service != c.service || path != c.path {
			t.Errorf("locate(%s) = %s %s, want %s %s", c.url, service, path, c.service, c.path)
		}
	}
}

func TestFaultError(t *testing.T) {
	err := error(&FaultError{Kind: AnswerLost, Err: connReset("read")})
	if !errors.Is(err, syscall.ECONNRESET) || !strings.Contains(err.Error(), "answer-lost") {
		t.Fatalf("%v", err)
	}
}

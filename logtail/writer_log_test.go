package logtail_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/logtail"
)

// logBuffer is a slog JSON handler's output, safe to read while a Writer's
// goroutine logs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// logger returns a logger of every level into b.
func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// records returns the records logged so far whose message contains msg.
func (b *logBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(b.buf.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m, _ := rec["msg"].(string); strings.Contains(m, msg) {
			out = append(out, rec)
		}
	}
	return out
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// wantFields checks that rec has each field of want with that value
// (compared as text), and a non-empty value for each name in present.
func wantFields(t *testing.T, rec map[string]any, want map[string]string, present ...string) {
	t.Helper()
	for k, v := range want {
		if got := fmt.Sprint(rec[k]); got != v {
			t.Errorf("log record %v: %s = %q, want %q", rec, k, got, v)
		}
	}
	for _, k := range present {
		if s, _ := rec[k].(string); s == "" {
			t.Errorf("log record %v: no %s", rec, k)
		}
	}
}

// TestBlobWriterLogsBackgroundFlush: a flush of the FlushInterval
// goroutine has no caller to return its error to; it is logged, with the
// container, the source, what stays buffered and the error.
func TestBlobWriterLogsBackgroundFlush(t *testing.T) {
	ctx := context.Background()
	var logs logBuffer
	acct := testenv.Account(t, &tablekit.Options{Logger: logs.logger()})           // the Writer logs to its Account's Logger
	c := acct.Blobs().ServiceClient().NewContainerClient(testenv.ContainerName(t)) // never created: every flush fails
	w, err := logtail.OpenWriter(acct, containerName(c), "app", &logtail.WriterOptions{FlushAge: time.Millisecond, FlushInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, "quiet"); err != nil {
		t.Fatal(err)
	}
	const msg = "background flush failed"
	deadline := time.Now().Add(30 * time.Second)
	for len(logs.records(t, msg)) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	recs := logs.records(t, msg)
	if len(recs) == 0 {
		t.Fatalf("no %q record; logged:\n%s", msg, logs.String())
	}
	wantFields(t, recs[0], map[string]string{"level": "WARN", "container": w.ContainerName(), "source": "app", "buffered": "1"}, "error")
	if !strings.Contains(fmt.Sprint(recs[0]["error"]), "ContainerNotFound") {
		t.Errorf("the logged error %q does not say the container is missing", recs[0]["error"])
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := w.Close(short); err == nil {
		t.Fatal("Close flushed into a container that does not exist")
	}
}

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"writer 1: 1500 records in 34 flushes (4 by size, 24 by age, the rest at period ends and at Close, which wrote the last 29 buffered records) into 6 blobs",
		"writer 2: 1500 records in 34 flushes",
		"writing 3000 records cost 160 transactions",
		"writer 2 found 6 blob names taken by writer 1 and moved on to the next NNNNNN",
		"the 15:00-15:10 folder: web/2024/05/06/1500/000000.log, web/2024/05/06/1500/000001.log",
		"metadata of web/2024/05/06/1500/000000.log: first 15:00:00.000, last 15:09:58.000, 300 records",
		"window 15:04-15:06: 120 records from both writers in time order (15:04:00.000 ... 15:05:58.001)",
		"one listing of hour 15 (12 blobs), and a download of only the 2 whose name and metadata overlap the window",
		"the 2 messages with a tab and a newline came back intact",
		"3 records cost 6 transactions",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}

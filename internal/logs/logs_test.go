package logs

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestOrDefersToTheDefaultAtLogTime: a nil logger logs to whatever
// slog.Default() is when it logs, with the attributes and groups it was
// given before.
func TestOrDefersToTheDefaultAtLogTime(t *testing.T) {
	given := slog.New(slog.DiscardHandler)
	if Or(given) != given {
		t.Fatal("Or replaced a logger it was given")
	}
	l := Or(nil).With("queue", "q1").WithGroup("g")
	old := slog.Default()
	defer slog.SetDefault(old)
	var buf bytes.Buffer
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	l.Info("hello", "n", 1)
	if got := buf.String(); !strings.Contains(got, "msg=hello queue=q1 g.n=1") {
		t.Errorf("logged %q", got)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError})))
	buf.Reset()
	l.Info("dropped")
	if buf.Len() != 0 {
		t.Errorf("a record below the default's level was logged: %q", buf.String())
	}
	slog.SetDefault(Or(nil))
	Or(nil).Info("nowhere") // must not loop
}

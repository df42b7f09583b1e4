// Package logs gives every package of tablekit the one meaning of a nil
// *slog.Logger: slog.Default() at the time of logging, so that a program
// that sets its default logger after building a worker or a table still
// gets their records.
package logs

import (
	"context"
	"log/slog"
)

// Or returns l, or a logger that logs to slog.Default() at the time of
// logging when l is nil.
func Or(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(deferred{})
}

// deferred is a slog.Handler that hands each record to the handler of
// slog.Default() at the time of logging, with the attributes and groups
// it was given.
type deferred struct {
	steps []step // WithAttrs and WithGroup calls, in order
}

// step is one WithAttrs (attrs) or WithGroup (group) call.
type step struct {
	attrs []slog.Attr
	group string
}

// target returns the current default handler with the steps applied.
func (d deferred) target() slog.Handler {
	h := slog.Default().Handler()
	if _, loop := h.(deferred); loop {
		// slog.SetDefault(logs.Or(nil)) would hand records to
		// themselves: there is nowhere to log.
		return slog.DiscardHandler
	}
	for _, s := range d.steps {
		if s.attrs != nil {
			h = h.WithAttrs(s.attrs)
		} else {
			h = h.WithGroup(s.group)
		}
	}
	return h
}

func (d deferred) Enabled(ctx context.Context, level slog.Level) bool {
	return d.target().Enabled(ctx, level)
}

func (d deferred) Handle(ctx context.Context, r slog.Record) error {
	return d.target().Handle(ctx, r)
}

func (d deferred) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return d
	}
	return deferred{steps: append(d.steps[:len(d.steps):len(d.steps)], step{attrs: attrs})}
}

func (d deferred) WithGroup(name string) slog.Handler {
	if name == "" {
		return d
	}
	return deferred{steps: append(d.steps[:len(d.steps):len(d.steps)], step{group: name})}
}

package archive

import (
	"context"
	"fmt"
	"sync"

	"github.com/tablekit/tablekit"
)

// Mux is a [Handler] that routes each message by its kind to the handler
// registered for it, with [HandleFunc] (typed payloads) or [Mux.Register]
// (the raw *Message). A message of an unknown kind, or one that is not a
// tablekit envelope, fails permanently (it goes to the poison queue
// without retries) unless a fallback is set with [Mux.HandleOther]. The
// zero Mux is ready to use; a Mux is safe for concurrent use.
//
//	var mux archive.Mux
//	err := archive.HandleFunc(&mux, archive.MoveKind, mover.Handle)
//	w, err := archive.OpenWorker(acct, "employee-archive", &mux, nil)
type Mux struct {
	mu       sync.RWMutex
	handlers map[string]func(ctx context.Context, m *Message) error
	other    Handler
}

// HandleFunc registers f on mux for messages of the given kind: the
// payload is decoded from JSON into a P and passed to f (a payload that
// does not decode fails permanently). A handler that needs the message
// itself (its ID, dequeue count or last error) is registered with
// [Mux.Register] and decodes with [Message.Decode]. Registering an empty
// kind or a kind twice is refused with a *tablekit.ValidationError (Op
// "archive.HandleFunc") matching tablekit.ErrInvalidInput.
func HandleFunc[P any](mux *Mux, kind string, f func(ctx context.Context, p P) error) error {
	const op = "archive.HandleFunc"
	if mux == nil || f == nil {
		return invalid(op, "", "mux and handler must not be nil")
	}
	return mux.register(op, kind, func(ctx context.Context, m *Message) error {
		var p P
		if err := m.Decode(&p); err != nil {
			return err
		}
		return f(ctx, p)
	})
}

// Register registers h for messages of the given kind, with the same
// rules as [HandleFunc] (refusals name Op "archive.Mux.Register"); h sees
// the raw *Message.
func (mux *Mux) Register(kind string, h Handler) error {
	const op = "archive.Mux.Register"
	if mux == nil {
		return invalid(op, "", "the Mux is nil")
	}
	if h == nil {
		return invalid(op, "handler", "handler is nil")
	}
	return mux.register(op, kind, h.Handle)
}

// HandleOther sets the handler for messages no registered kind matches
// (including foreign messages, whose Kind is ""). nil restores the
// default: fail permanently.
func (mux *Mux) HandleOther(h Handler) {
	if mux == nil {
		return
	}
	mux.mu.Lock()
	mux.other = h
	mux.mu.Unlock()
}

func (mux *Mux) register(op, kind string, f func(ctx context.Context, m *Message) error) error {
	if kind == "" {
		return invalid(op, "kind", "kind is empty")
	}
	mux.mu.Lock()
	defer mux.mu.Unlock()
	if mux.handlers == nil {
		mux.handlers = make(map[string]func(ctx context.Context, m *Message) error)
	}
	if _, dup := mux.handlers[kind]; dup {
		return invalid(op, "kind", fmt.Sprintf("kind %q is already registered", kind))
	}
	mux.handlers[kind] = f
	return nil
}

// Handle routes m to the handler registered for m.Kind; it makes Mux a
// [Handler].
func (mux *Mux) Handle(ctx context.Context, m *Message) error {
	const op = "archive.Mux.Handle"
	if mux == nil || m == nil {
		return Permanent(invalid(op, "", "the Mux or the Message is nil"))
	}
	mux.mu.RLock()
	f := mux.handlers[m.Kind]
	other := mux.other
	mux.mu.RUnlock()
	switch {
	case f != nil:
		return f(ctx, m)
	case other != nil:
		return other.Handle(ctx, m)
	}
	return Permanent(fmt.Errorf("archive: Mux.Handle: message %s: no handler for kind %q: %w", m.ID, m.Kind, tablekit.ErrInvalidInput))
}

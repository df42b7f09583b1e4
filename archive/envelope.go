package archive

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"time"
)

// maxMessageSize is the queue's limit on a message's text: 64 KiB. The
// envelope is base64-encoded, so at most 48 KiB of envelope JSON fits.
const maxMessageSize = 64 * 1024

// envelope is the JSON inside every message the Client sends, base64
// encoded (as Azure Functions' queue trigger expects by default):
//
//	{"kind":"archive.move","payload":{...}}
//	{"kind":"archive.move","blob":"claims/9f...json"}            (claim check)
//	{"kind":"...","payload":{...},"lastError":"...","attempt":3}  (after a failed attempt)
//
// A poison message is the same envelope plus a "poison" object.
type envelope struct {
	Kind    string          `json:"kind"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Blob    string          `json:"blob,omitempty"`
	// LastError and Attempt are written back into the message after a
	// failed attempt, so a worker that meets it later knows why it failed.
	LastError string `json:"lastError,omitempty"`
	Attempt   int64  `json:"attempt,omitempty"`
	// Text holds a foreign (non-envelope) message's text in a poison
	// record.
	Text   string        `json:"text,omitempty"`
	Poison *poisonRecord `json:"poison,omitempty"`
}

// poisonRecord is the "poison" object of a poison message: where the
// message came from and why it failed (see [Poisoned]).
type poisonRecord struct {
	MessageID    string    `json:"messageId"`
	Queue        string    `json:"queue"`
	DequeueCount int64     `json:"dequeueCount"`
	Error        string    `json:"error"`
	InsertedAt   time.Time `json:"insertedAt"`
	PoisonedAt   time.Time `json:"poisonedAt"`
}

// Poisoned is a message read back from a poison queue with [ParsePoison]:
// the original message, and where it came from and why it failed.
type Poisoned struct {
	// MessageID is the message's ID in the work queue. A message is
	// poisoned at most once per delivery that owns it, and the ID lets a
	// reader recognise the rare duplicate (see the package doc).
	MessageID string
	// Queue is the name of the work queue.
	Queue string
	// DequeueCount is the message's dequeue count when it was poisoned.
	DequeueCount int64
	// Error is the last error a handler returned (or why the worker gave
	// up without running one).
	Error string
	// InsertedAt is when the message entered the work queue, PoisonedAt
	// when the worker moved it.
	InsertedAt, PoisonedAt time.Time
	// Kind, Payload and Blob are the original envelope's (Blob: the claim
	// check blob, kept so the payload is not lost).
	Kind    string
	Payload json.RawMessage
	Blob    string
	// Text is the original text of a message that was not a tablekit
	// envelope.
	Text string
}

// ParsePoison decodes the text of a poison-queue message written by a
// [Worker]. Other text is refused with a *tablekit.ValidationError (Op
// "archive.ParsePoison") matching tablekit.ErrInvalidInput.
func ParsePoison(text string) (Poisoned, error) {
	var env envelope
	data, err := base64.StdEncoding.DecodeString(text)
	if err == nil {
		err = json.Unmarshal(data, &env)
	}
	if err != nil || env.Poison == nil {
		return Poisoned{}, invalid("archive.ParsePoison", "text", "not a tablekit poison record")
	}
	r := env.Poison
	return Poisoned{
		MessageID: r.MessageID, Queue: r.Queue, DequeueCount: r.DequeueCount, Error: r.Error,
		InsertedAt: r.InsertedAt, PoisonedAt: r.PoisonedAt,
		Kind: env.Kind, Payload: env.Payload, Blob: env.Blob, Text: env.Text,
	}, nil
}

// encodeEnvelope returns the message text for env: base64 of its JSON.
func encodeEnvelope(env *envelope) (string, error) {
	data, err := json.Marshal(env)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(data), nil
}

// decodeEnvelope parses a message text as a tablekit envelope. ok is false
// for a foreign message: not base64, not a JSON object, or without "kind".
func decodeEnvelope(text string) (*envelope, bool) {
	data, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return nil, false
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' || !bytes.Contains(data, []byte(`"kind"`)) {
		return nil, false
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil || env.Kind == "" {
		return nil, false
	}
	return &env, true
}

// foreignBody returns the body of a foreign message: base64-decoded when it
// is valid base64, else the text itself.
func foreignBody(text string) []byte {
	if data, err := base64.StdEncoding.DecodeString(text); err == nil && len(text) > 0 {
		return data
	}
	return []byte(text)
}

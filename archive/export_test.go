package archive

import "time"

// SetClock makes w tell the time of poison records and queue ages by
// clock instead of time.Now.
func SetClock(w *Worker, clock func() time.Time) { w.clock = clock }

// EncodeForTest returns the message text Client.Enqueue would send for an
// inline payload.
func EncodeForTest(kind string, payload any) (string, error) {
	raw, err := marshalPayload(payload)
	if err != nil {
		return "", err
	}
	return encodeEnvelope(&envelope{Kind: kind, Payload: raw})
}

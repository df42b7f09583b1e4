package archive

// EncodeForTest returns the message text Client.Enqueue would send for an
// inline payload.
func EncodeForTest(kind string, payload any) (string, error) {
	raw, err := marshalPayload(payload)
	if err != nil {
		return "", err
	}
	return encodeEnvelope(&envelope{Kind: kind, Payload: raw})
}

package tablekit

// cryptContext is the client-side encryption in force for one table. A nil
// *cryptContext encrypts nothing.
type cryptContext struct {
	properties map[string]bool // Entity properties to encrypt
}

// encrypts reports whether the named Entity property is encrypted.
func (c *cryptContext) encrypts(name string) bool {
	return c != nil && c.properties[name]
}

// looksEncrypted reports whether a binary property carries tablekit's
// encryption header.
func (c *cryptContext) looksEncrypted(rp *rawProp) bool {
	return false
}

// appendEncrypted encrypts one property value and appends it as Edm.Binary.
func (s *encodeState) appendEncrypted(dst []byte, name string, edm EdmType, v any) ([]byte, error) {
	return dst, s.fail(name, "", 0, "the property is marked for encryption but the table has no encryption configured", ErrInvalidInput)
}

// decrypt decrypts one encrypted property back to its plain raw form.
func (d *decodeState) decrypt(name string, rp *rawProp) (*rawProp, error) {
	return nil, d.fail(name, "the property is encrypted but the table has no encryption configured")
}

// Encryption configures client-side property encryption for a [Table].
type Encryption struct {
	// Properties names the properties to encrypt in a Table[Entity]; struct
	// tables use the encrypt tag option instead.
	Properties []string
}

// newCryptContext prepares the encryption of a table; nil enc gives nil.
func newCryptContext(enc *Encryption, plan *typePlan) (*cryptContext, error) {
	if enc == nil {
		return nil, nil
	}
	return nil, &ValidationError{Detail: "client-side encryption is not available yet", Err: ErrInvalidInput}
}

// checkFilter refuses a filter that compares an encrypted property: the
// service only sees ciphertext, so such a filter would silently match nothing.
func (c *cryptContext) checkFilter(f Filter) error {
	if c == nil {
		return nil
	}
	for _, p := range f.Properties() {
		if c.encrypts(p) {
			return &ValidationError{Property: p, Detail: "cannot filter on an encrypted property: the service stores only ciphertext", Err: ErrInvalidInput}
		}
	}
	return nil
}

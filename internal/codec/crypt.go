package codec

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tablekit/tablekit/internal/cryptkey"
	"github.com/tablekit/tablekit/internal/jsonw"
	"github.com/tablekit/tablekit/internal/limits"
)

// ErrDecrypt is matched (with [errors.Is]) by read errors for encrypted
// properties that cannot be decrypted: the value is not tablekit
// ciphertext, was altered, was copied from another entity or property, or
// was written with another key of the same id. Reads of values whose key
// the resolver does not know match both ErrDecrypt and [ErrKeyNotFound].
var ErrDecrypt = errors.New("tablekit: cannot decrypt property")

const (
	encMagic      = "TKE"
	encVersion    = 1
	encNonceSize  = 12
	encTagSize    = 16
	encMinHeader  = len(encMagic) + 1 + 1 + 1 + encNonceSize // with a 1-byte key id
	encMinSize    = encMinHeader + 1 + encTagSize            // plus the type byte
	encMaxVersion = 15                                       // versions this reader recognises as tablekit's
)

// Wire codes of the EDM types in a plaintext: stable, unlike edmType's
// values.
var edmCodes = [...]byte{
	edmString:   'S',
	edmInt32:    'I',
	edmInt64:    'L',
	edmDouble:   'D',
	edmBoolean:  'B',
	edmDateTime: 'T',
	edmGUID:     'G',
	edmBinary:   'X',
}

func edmFromCode(c byte) (edmType, bool) {
	for t, code := range edmCodes {
		if code == c {
			return edmType(t), true
		}
	}
	return 0, false
}

// Encryption configures client-side property encryption for a tablekit.Table
// (TableOptions.Encryption): the values of the chosen properties are
// encrypted before they leave the process and decrypted after they are read,
// with keys the storage account never sees.
//
// A property marked for encryption (a struct field tagged
// `table:"Name,encrypt"`, or a name in Properties for a Table[Entity]) is
// stored as an Edm.Binary value, sealed with AES-256-GCM and bound to its
// entity and property name; a read gives back the type that was written.
// Merges work, keys are never encrypted, a filter on an encrypted property
// is refused before sending, and keys rotate through Keys (package
// keyring). The format and its guarantees: "Client-side encryption" in the
// package documentation.
type Encryption struct {
	// Keys supplies the keys: the current one for writes, any by id for
	// reads. Required. keyring.KeyRing is the in-memory implementation.
	Keys KeyResolver
	// Properties names the properties to encrypt in a Table[Entity]. Struct
	// tables use the encrypt tag option instead; if Properties is set for a
	// struct table, every name in it must be a field tagged encrypt (so one
	// Encryption value can serve an Entity table and a struct table over
	// the same data). PartitionKey and RowKey cannot be encrypted.
	Properties []string
}

// cryptContext is the client-side encryption in force for one table. A nil
// *cryptContext encrypts nothing.
type cryptContext struct {
	properties map[string]bool // properties to encrypt
	keys       KeyResolver
	ciphers    sync.Map // key id -> *keyCipher
}

// keyCipher is the cached AEAD of one key id.
type keyCipher struct {
	aead cipher.AEAD
	sum  [sha256.Size]byte // the key's SHA-256, to notice a resolver that changes it
}

// newCryptContext prepares the encryption of a table; nil enc gives nil.
func newCryptContext(enc *Encryption, plan *typePlan) (*cryptContext, error) {
	if enc == nil {
		return nil, nil
	}
	if enc.Keys == nil {
		return nil, &ValidationError{Property: "Encryption.Keys", Detail: "encryption needs a KeyResolver (for example a *keyring.KeyRing)", Err: ErrInvalidInput}
	}
	c := &cryptContext{properties: map[string]bool{}, keys: enc.Keys}
	for _, name := range enc.Properties {
		switch name {
		case "PartitionKey", "RowKey":
			return nil, &ValidationError{Property: name, Detail: "the PartitionKey and RowKey are never encrypted: the service needs them in clear to address and order entities", Err: ErrInvalidInput}
		}
		if err := validPropertyName(name); err != nil {
			return nil, &ValidationError{Property: name, Detail: "Encryption.Properties: " + err.Error(), Err: ErrInvalidInput}
		}
		if plan != nil {
			idx, ok := plan.byName[name]
			if !ok || !plan.fields[idx].encrypt {
				return nil, planError(plan.typ, name, "Encryption.Properties names %q, which is not a field tagged encrypt; tag the field `table:\"%s,encrypt\"`", name, name)
			}
		}
		c.properties[name] = true
	}
	if plan != nil {
		for i := range plan.fields {
			if plan.fields[i].encrypt {
				c.properties[plan.fields[i].name] = true
			}
		}
	}
	return c, nil
}

// encrypts reports whether the named property is encrypted.
func (c *cryptContext) encrypts(name string) bool {
	return c != nil && c.properties[name]
}

// cipherFor returns the AEAD of key id, resolving and caching it; key is
// the key when the caller already has it (CurrentKey), else nil.
func (c *cryptContext) cipherFor(id string, key []byte) (cipher.AEAD, error) {
	if v, ok := c.ciphers.Load(id); ok {
		kc := v.(*keyCipher)
		if key != nil {
			if sum := sha256.Sum256(key); subtle.ConstantTimeCompare(kc.sum[:], sum[:]) != 1 {
				return nil, fmt.Errorf("the key resolver returned a different key for id %q than before; a key id must always name the same key", id)
			}
		}
		return kc.aead, nil
	}
	if key == nil {
		k, err := c.keys.ResolveKey(context.Background(), id)
		if err != nil {
			return nil, err
		}
		key = k
	}
	if len(key) != cryptkey.Size {
		return nil, fmt.Errorf("the key resolver returned a %d-byte key for id %q; AES-256 needs %d bytes", len(key), id, cryptkey.Size)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("key %q: cannot create the cipher", id)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("key %q: cannot create the cipher", id)
	}
	kc := &keyCipher{aead: aead, sum: sha256.Sum256(key)}
	v, _ := c.ciphers.LoadOrStore(id, kc)
	return v.(*keyCipher).aead, nil
}

// additionalData returns the data every value is bound to: its header and
// the entity's keys and property name, each length-prefixed.
func additionalData(header []byte, pk, rk, name string) []byte {
	ad := make([]byte, 0, len(header)+12+len(pk)+len(rk)+len(name))
	ad = append(ad, header...)
	for _, s := range [...]string{pk, rk, name} {
		ad = binary.BigEndian.AppendUint32(ad, uint32(len(s)))
		ad = append(ad, s...)
	}
	return ad
}

// seal encrypts plaintext for property name of entity pk/rk under key id.
func (c *cryptContext) seal(id string, key []byte, pk, rk, name string, plaintext []byte) ([]byte, error) {
	aead, err := c.cipherFor(id, key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(encMagic)+2+len(id)+encNonceSize+len(plaintext)+encTagSize)
	out = append(out, encMagic...)
	out = append(out, encVersion, byte(len(id)))
	out = append(out, id...)
	nonce := out[len(out) : len(out)+encNonceSize]
	rand.Read(nonce) // never fails (crypto/rand aborts the program instead)
	out = out[:len(out)+encNonceSize]
	return aead.Seal(out, nonce, plaintext, additionalData(out, pk, rk, name)), nil
}

// parsedCiphertext is the header of an encrypted value.
type parsedCiphertext struct {
	version    byte
	keyID      string
	header     []byte // magic through nonce
	nonce      []byte
	ciphertext []byte // with the tag
}

// parseCiphertext splits an encrypted value; the error says what is wrong
// (without echoing the value).
func parseCiphertext(b []byte) (parsedCiphertext, error) {
	var p parsedCiphertext
	if len(b) < len(encMagic)+1 || string(b[:len(encMagic)]) != encMagic {
		return p, errors.New("the value is not tablekit ciphertext (no TKE header)")
	}
	p.version = b[len(encMagic)]
	if p.version != encVersion {
		return p, fmt.Errorf("the value uses encryption format version %d; this tablekit reads version %d", p.version, encVersion)
	}
	if len(b) < encMinSize {
		return p, fmt.Errorf("the encrypted value is truncated (%d bytes)", len(b))
	}
	n := int(b[len(encMagic)+1])
	idStart := len(encMagic) + 2
	if n == 0 || len(b) < idStart+n+encNonceSize+1+encTagSize {
		return p, fmt.Errorf("the encrypted value's header is malformed or truncated (%d bytes)", len(b))
	}
	p.keyID = string(b[idStart : idStart+n])
	if cryptkey.IDProblem(p.keyID) != "" {
		return p, errors.New("the encrypted value's key id is malformed")
	}
	hdrEnd := idStart + n + encNonceSize
	p.header = b[:hdrEnd]
	p.nonce = b[idStart+n : hdrEnd]
	p.ciphertext = b[hdrEnd:]
	return p, nil
}

// CiphertextKeyID returns the id of the key that encrypted value, a raw
// Edm.Binary property value written by tablekit's encryption (as plain
// aztables or a Table without Encryption reads it). Use it to find the
// entities still encrypted with a key you want to retire. It does not
// decrypt or authenticate anything.
func CiphertextKeyID(value []byte) (string, error) {
	p, err := parseCiphertext(value)
	if err != nil {
		return "", &ValidationError{Op: "CiphertextKeyID", Detail: err.Error(), Err: ErrInvalidInput}
	}
	return p.keyID, nil
}

// open authenticates and decrypts an encrypted value for property name of
// entity pk/rk and returns its plaintext.
func (c *cryptContext) open(value []byte, pk, rk, name string) ([]byte, string, error) {
	p, err := parseCiphertext(value)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s", ErrDecrypt, err.Error())
	}
	aead, err := c.cipherFor(p.keyID, nil)
	if err != nil {
		if errors.Is(err, ErrKeyNotFound) {
			return nil, p.keyID, fmt.Errorf("%w: %w: the value was encrypted with key %q, which the key resolver does not have (was it removed before every value was rewritten?)", ErrDecrypt, ErrKeyNotFound, p.keyID)
		}
		return nil, p.keyID, fmt.Errorf("%w: key %q: %s", ErrDecrypt, p.keyID, safeMessage(err))
	}
	pt, err := aead.Open(nil, p.nonce, p.ciphertext, additionalData(p.header, pk, rk, name))
	if err != nil {
		return nil, p.keyID, fmt.Errorf("%w: the ciphertext does not authenticate under key %q for this entity and property: it was copied from another entity or property, altered, or encrypted with a different key under the same id", ErrDecrypt, p.keyID)
	}
	return pt, p.keyID, nil
}

// safeMessage returns the message of an error from a key resolver. Our own
// resolver's errors never hold key material; for others only the message is
// used, which resolvers are required to keep free of secrets.
func safeMessage(err error) string { return err.Error() }

// plaintextOf builds the plaintext of one value: its type code and its
// canonical value encoding. ok is false when the value is absent (a zero
// time).
func (s *encodeState) plaintextOf(name string, edm edmType, v any) ([]byte, bool, error) {
	// appendProperty checks the value (type, range, UTF-8, size) as for a
	// plain property and gives its canonical JSON. Strings and binary are
	// then stored raw: JSON escapes or base64 would waste the 64 KiB.
	tmp := encodeState{table: s.table, entity: s.entity, pk: s.pk, rk: s.rk}
	js, err := tmp.appendProperty(s.scratch[:0], name, edm, v)
	defer func() { clear(js); s.scratch = js[:0] }()
	if err != nil {
		return nil, false, err
	}
	if len(js) == 0 {
		return nil, false, nil
	}
	if int(edm) >= len(edmCodes) {
		return nil, false, s.typeMismatch(name, edm, v)
	}
	pt := []byte{edmCodes[edm]}
	switch edm {
	case edmString:
		return append(pt, v.(string)...), true, nil
	case edmBinary:
		return append(pt, v.([]byte)...), true, nil
	}
	// js is `,"name":<token>[,"name@odata.type":"..."]`: take the token.
	sc := scanner{b: js, i: 1}
	if _, _, err := sc.str(); err != nil {
		return nil, false, s.fail(name, "", 0, "internal error: cannot re-read the encoded value", ErrInvalidInput)
	}
	if err := sc.expect(':'); err != nil {
		return nil, false, s.fail(name, "", 0, "internal error: cannot re-read the encoded value", ErrInvalidInput)
	}
	sc.ws()
	start := sc.i
	if _, _, _, err := sc.value(); err != nil {
		return nil, false, s.fail(name, "", 0, "internal error: cannot re-read the encoded value", ErrInvalidInput)
	}
	return append(pt, js[start:sc.i]...), true, nil
}

// appendEncrypted encrypts one property value and appends it as Edm.Binary.
func (s *encodeState) appendEncrypted(dst []byte, name string, edm edmType, v any) ([]byte, error) {
	c := s.crypt
	if c == nil {
		return dst, s.fail(name, "", 0, "the property is marked for encryption but the table has no encryption configured (set TableOptions.Encryption)", ErrInvalidInput)
	}
	pt, present, err := s.plaintextOf(name, edm, v)
	if err != nil || !present {
		return dst, err
	}
	defer clear(pt)
	id, key, err := c.keys.CurrentKey(context.Background())
	if err != nil {
		detail := safeMessage(err)
		var ve *ValidationError
		if errors.As(err, &ve) && ve.Detail != "" {
			detail = ve.Detail
		}
		return dst, &ValidationError{Entity: s.describe(), Property: name, Detail: "no encryption key: " + detail, Err: err}
	}
	if p := cryptkey.IDProblem(id); p != "" {
		return dst, s.fail(name, "", 0, "the key resolver's current key id is invalid: "+p, ErrInvalidInput)
	}
	sealed, err := c.seal(id, key, s.pk, s.rk, name, pt)
	if err != nil {
		return dst, s.fail(name, "", 0, "encryption: "+safeMessage(err), ErrInvalidInput)
	}
	if len(sealed) > limits.PropertyBytes {
		return dst, s.tooLarge(name, "<= 64 KiB per property (after encryption, which adds "+fmt.Sprint(len(sealed)-len(pt)+1)+" bytes)", len(sealed), "bytes", "encrypted value too large", ErrTooLarge)
	}
	dst = append(dst, ',')
	dst = jsonw.AppendString(dst, name)
	dst = append(dst, `:"`...)
	dst = base64.StdEncoding.AppendEncode(dst, sealed)
	dst = append(dst, `","`...)
	dst = append(dst, name...)
	dst = append(dst, `@odata.type":"Edm.Binary"`...)
	return dst, s.addProperty(name, 4+len(sealed))
}

// looksEncrypted reports whether a binary property carries tablekit's
// encryption header. It decodes only the first bytes.
func (c *cryptContext) looksEncrypted(rp *rawProp) bool {
	if rp.kind != tokString {
		return false
	}
	b := rp.val
	if rp.escaped {
		b = unescapeBytes(b)
	}
	if len(b) < base64.StdEncoding.EncodedLen(encMinSize)-2 {
		return false
	}
	var head [6]byte
	if _, err := base64.StdEncoding.Decode(head[:], b[:8]); err != nil {
		return false
	}
	return string(head[:3]) == encMagic && head[3] >= 1 && head[3] <= encMaxVersion && head[4] != 0
}

// decrypt decrypts one encrypted property back to its plain raw form.
func (d *decodeState) decrypt(name string, rp *rawProp) (*rawProp, error) {
	c := d.crypt
	if c == nil {
		return nil, d.failWith(ErrDecrypt, name, "the property is encrypted but the table has no encryption configured (set TableOptions.Encryption)")
	}
	fail := func(sentinel error, format string, args ...any) error {
		return d.failWith(sentinel, name, format, args...)
	}
	if rp.kind != tokString || rp.edm != edmBinary {
		// Never show the value: it may be a secret written in clear.
		return nil, fail(ErrDecrypt, "the property is encrypted in this table but holds a plain %s value, not tablekit ciphertext (was it written without encryption?)", rp.edm)
	}
	raw, err := decodeBase64(rp.bytesValue())
	if err != nil {
		return nil, fail(ErrDecrypt, "the encrypted value is not valid base64")
	}
	pt, _, err := c.open(raw, d.pk, d.rk, name)
	if err != nil {
		return nil, fail(err, "%s", trimSentinel(err))
	}
	out, err := parsePlaintext(pt)
	if err != nil {
		return nil, fail(ErrDecrypt, "the decrypted value is malformed: %v", err)
	}
	out.name = rp.name
	return out, nil
}

// trimSentinel returns err's message without the leading ErrDecrypt text,
// which DecodeError's own message makes redundant.
func trimSentinel(err error) string {
	msg := strings.TrimPrefix(err.Error(), ErrDecrypt.Error()+": ")
	return strings.TrimPrefix(msg, ErrKeyNotFound.Error()+": ")
}

// parsePlaintext turns a decrypted plaintext into the raw property the
// normal decode path converts.
func parsePlaintext(pt []byte) (*rawProp, error) {
	if len(pt) == 0 {
		return nil, errors.New("empty plaintext")
	}
	edm, ok := edmFromCode(pt[0])
	if !ok {
		return nil, fmt.Errorf("unknown type code %d", pt[0])
	}
	body := pt[1:]
	switch edm {
	case edmString:
		return &rawProp{val: body, kind: tokString, edm: edm, typed: true}, nil
	case edmBinary:
		return &rawProp{val: base64.StdEncoding.AppendEncode(nil, body), kind: tokString, edm: edm, typed: true}, nil
	}
	if len(body) == 0 || body[0] == '{' || body[0] == '[' {
		// No EDM value is a JSON object or array.
		return nil, fmt.Errorf("a %s value that is not a JSON scalar", edm)
	}
	sc := scanner{b: body}
	val, kind, esc, err := sc.value()
	if err != nil {
		return nil, err
	}
	if err := sc.end(); err != nil {
		return nil, err
	}
	want := tokString
	switch edm {
	case edmInt32:
		want = tokNumber
	case edmBoolean:
		if kind == tokTrue || kind == tokFalse {
			want = kind
		}
	case edmDouble:
		if kind == tokNumber {
			want = kind
		}
	}
	if kind != want {
		return nil, fmt.Errorf("a %s value with the wrong JSON kind", edm)
	}
	return &rawProp{val: val, kind: kind, escaped: esc, edm: edm, typed: true}, nil
}

// checkFilter refuses a filter that compares an encrypted property: the
// service only sees ciphertext, so such a filter would silently match nothing.
func (c *cryptContext) checkFilter(props []string) error {
	if c == nil {
		return nil
	}
	for _, p := range props {
		if c.encrypts(p) {
			return &ValidationError{Property: p, Detail: "cannot filter on an encrypted property: the service stores only ciphertext (filter on the keys or a plain property, then test the decrypted value in code)", Err: ErrInvalidInput}
		}
	}
	return nil
}

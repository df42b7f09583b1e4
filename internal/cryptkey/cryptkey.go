// Package cryptkey holds the rules of tablekit's property encryption keys,
// shared by the root package (which checks what a KeyResolver returns and
// the key id in a ciphertext's header) and package keyring (which checks
// the keys it is given), so that the two cannot disagree.
package cryptkey

import "fmt"

// Size is the size of a property encryption key: 32 bytes (AES-256).
const Size = 32

// MaxIDLength is the longest key id an encrypted value can name, in bytes
// (the ciphertext header stores its length in one byte); long enough for
// an Azure Key Vault key URL.
const MaxIDLength = 255

// IDProblem says what is wrong with a key id, or returns "". A key id is
// 1-MaxIDLength bytes of printable ASCII without spaces.
func IDProblem(id string) string {
	if id == "" {
		return "key id is empty"
	}
	if len(id) > MaxIDLength {
		return fmt.Sprintf("key id is %d bytes; the limit is %d", len(id), MaxIDLength)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= 0x20 || c >= 0x7f {
			return fmt.Sprintf("key id has a character that is not printable ASCII at byte %d", i)
		}
	}
	return ""
}

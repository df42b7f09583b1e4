package keyring_test

import (
	"fmt"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keyring"
)

// Key rotation: new writes use the current key; values keep naming the key
// that encrypted them, so old rows decrypt while the ring still has it.
func ExampleKeyRing_Rotate() {
	var ring keyring.KeyRing
	ring.Add("2025-q1", keyring.GenerateKey())
	fmt.Println(ring.Current())

	ring.Rotate("2025-q2", keyring.GenerateKey())
	fmt.Println(ring.Current(), ring.IDs())

	// After every row has been rewritten (read, then update), retire q1.
	ring.Remove("2025-q1")
	fmt.Println(ring.Current(), ring.IDs())
	// Output:
	// 2025-q1
	// 2025-q2 [2025-q1 2025-q2]
	// 2025-q2 [2025-q2]
}

// A ring is the Keys of a table's Encryption.
func ExampleKeyRing() {
	ring := new(keyring.KeyRing)
	if err := ring.Add("2025-06", keyring.GenerateKey()); err != nil { // in production: a key from Key Vault
		fmt.Println(err)
		return
	}
	enc := &tablekit.Encryption{Keys: ring, Properties: []string{"SSN"}}
	fmt.Println(enc.Properties, ring.Current())
	// Output:
	// [SSN] 2025-06
}

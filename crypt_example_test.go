package tablekit_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/tablekit/tablekit"
)

// A struct with encrypted fields: tag them encrypt and give the Table an
// Encryption with a key resolver.
func ExampleEncryption() {
	type Employee struct {
		Department string `table:",pk"`
		ID         string `table:",rk"`
		Email      string
		SSN        string `table:"SSN,encrypt"`    // stored as AES-256-GCM ciphertext
		Salary     int64  `table:"Salary,encrypt"` // decrypts back to an Edm.Int64
	}
	ctx := context.Background()
	acct, err := tablekit.Open(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ring := tablekit.NewKeyRing()
	ring.Add("2025-06", loadKey()) // keep keys out of the storage account (e.g. in Key Vault)
	emp, err := tablekit.OpenTable[Employee](acct, "Employees", &tablekit.TableOptions{
		Encryption: &tablekit.Encryption{Keys: ring},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := emp.Insert(ctx, Employee{Department: "Sales", ID: "000223", Email: "ada@example.com", SSN: "078-05-1120", Salary: 90000}); err != nil {
		fmt.Println(err)
		return
	}
	e, err := emp.Get(ctx, "Sales", "000223")
	if errors.Is(err, tablekit.ErrDecrypt) {
		fmt.Println("tampered, moved, or encrypted with another key:", err)
		return
	}
	fmt.Println(e.SSN)
}

func loadKey() []byte { return tablekit.GenerateKey() }

// Key rotation: new writes use the current key; values keep naming the key
// that encrypted them, so old rows decrypt while the ring still has it.
func ExampleKeyRing_Rotate() {
	ring := tablekit.NewKeyRing()
	ring.Add("2025-q1", tablekit.GenerateKey())
	fmt.Println(ring.Current())

	ring.Rotate("2025-q2", tablekit.GenerateKey())
	fmt.Println(ring.Current(), ring.IDs())

	// After every row has been rewritten (read, then Update), retire q1.
	ring.Remove("2025-q1")
	fmt.Println(ring) // never prints key material
	// Output:
	// 2025-q1
	// 2025-q2 [2025-q1 2025-q2]
	// KeyRing{current: "2025-q2", keys: [2025-q2]}
}

// Filters on encrypted properties are refused: the service only sees
// ciphertext.
func ExampleEncryption_filter() {
	acct, err := tablekit.Open("UseDevelopmentStorage=true", nil) // does not connect
	if err != nil {
		fmt.Println(err)
		return
	}
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, "People", &tablekit.TableOptions{
		Encryption: &tablekit.Encryption{Keys: tablekit.NewKeyRing(), Properties: []string{"SSN"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = tbl.Top(context.Background(), tablekit.Where("SSN eq ?", "078-05-1120"), 1, nil)
	fmt.Println(errors.Is(err, tablekit.ErrInvalidInput))
	// Output:
	// true
}

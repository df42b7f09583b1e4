package tablekit_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keyring"
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
	ring := new(keyring.KeyRing)
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

func loadKey() []byte { return keyring.GenerateKey() }

// Filters on encrypted properties are refused: the service only sees
// ciphertext.
func ExampleEncryption_filter() {
	acct, err := tablekit.Open("UseDevelopmentStorage=true", nil) // does not connect
	if err != nil {
		fmt.Println(err)
		return
	}
	tbl, err := tablekit.OpenTable[tablekit.Entity](acct, "People", &tablekit.TableOptions{
		Encryption: &tablekit.Encryption{Keys: new(keyring.KeyRing), Properties: []string{"SSN"}},
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

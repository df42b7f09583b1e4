package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestRun runs the example against the test account and checks that its
// narration states the results the pattern promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), testenv.Account(t, nil), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		`the keys come from a key ring: current "2025-q1", ids [2025-q1]`,
		`inserted 2 patients and read one back: Ada, SSN 078-05-1120, diagnosis "arrhythmia" (3 transactions, the 2 inserts and the read: encryption adds none)`,
		`read without keys, SSN is Edm.Binary, `,
		`(header naming key "2025-q1", nonce, ciphertext, tag), no plaintext; Name is still "Ada"`,
		"Ada's SSN ciphertext pasted into Bob's row does not decrypt (ErrDecrypt)",
		"filtering on SSN is refused (ErrInvalidInput), 0 transactions",
		`merged only Ada's Diagnosis (as a property bag): now "arrhythmia, treated", and her SSN written earlier still decrypts: 078-05-1120`,
		"key ids per row: [p001 SSN=2025-q1 Diagnosis=2025-q2; p002 SSN=2025-q1 Diagnosis=2025-q1; p003 SSN=2025-q2 Diagnosis=2025-q2]",
		"rewrote the 2 rows with a property under the old key; key ids now [p001 SSN=2025-q2 Diagnosis=2025-q2; p002 SSN=2025-q2 Diagnosis=2025-q2; p003 SSN=2025-q2 Diagnosis=2025-q2]; 2025-q1 removed from the ring",
		"all 3 patients read back intact without the old key",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("narration lacks %q:\n%s", want, out.String())
		}
	}
}

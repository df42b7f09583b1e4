package keyring_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keyring"
)

func TestKeyRing(t *testing.T) {
	ctx := context.Background()
	var ring keyring.KeyRing // the zero KeyRing is empty and ready
	if ring.Current() != "" || len(ring.IDs()) != 0 {
		t.Fatalf("zero ring: %q %v", ring.Current(), ring.IDs())
	}
	if _, err := ring.ResolveKey(ctx, "k1"); !errors.Is(err, tablekit.ErrKeyNotFound) {
		t.Fatalf("zero ring: %v", err)
	}
	if err := ring.SetCurrent("k1"); !errors.Is(err, tablekit.ErrKeyNotFound) {
		t.Fatalf("zero ring: %v", err)
	}
	if err := ring.Remove("k1"); !errors.Is(err, tablekit.ErrKeyNotFound) {
		t.Fatalf("zero ring: %v", err)
	}
	if _, _, err := ring.CurrentKey(ctx); !errors.Is(err, tablekit.ErrKeyNotFound) {
		t.Fatalf("empty ring: %v", err)
	}
	k1, k2 := keyring.GenerateKey(), keyring.GenerateKey()
	if len(k1) != keyring.KeySize || bytes.Equal(k1, k2) {
		t.Fatal("GenerateKey")
	}
	for _, tc := range []struct {
		id  string
		key []byte
		is  error
	}{
		{"", k1, tablekit.ErrInvalidInput},
		{"has space", k1, tablekit.ErrInvalidInput},
		{"é", k1, tablekit.ErrInvalidInput},
		{strings.Repeat("x", keyring.MaxKeyIDLength+1), k1, tablekit.ErrInvalidInput},
		{"short", k1[:16], tablekit.ErrInvalidInput},
	} {
		if err := ring.Add(tc.id, tc.key); !errors.Is(err, tc.is) || !strings.HasPrefix(err.Error(), "keyring: KeyRing.Add: ") {
			t.Errorf("Add(%q, %d bytes): %v (want %v, starting keyring: KeyRing.Add:)", tc.id, len(tc.key), err, tc.is)
		}
	}
	if err := ring.Add(strings.Repeat("x", keyring.MaxKeyIDLength), k1); err != nil {
		t.Fatalf("a key id of the longest length: %v", err)
	}
	if err := ring.Remove(strings.Repeat("x", keyring.MaxKeyIDLength)); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Fatalf("removing the current key: %v", err)
	}
	ring = keyring.KeyRing{}
	if err := ring.Add("https://vault.vault.azure.net/keys/k/0123456789abcdef", k1); err != nil {
		t.Fatal(err)
	}
	if err := ring.Add("k1", k1); err != nil {
		t.Fatal(err)
	}
	if ring.Current() != "https://vault.vault.azure.net/keys/k/0123456789abcdef" {
		t.Fatalf("first key added is not current: %s", ring.Current())
	}
	if err := ring.Add("k1", k1); err != nil {
		t.Fatalf("re-adding the same key: %v", err)
	}
	if err := ring.Add("k1", k2); !errors.Is(err, tablekit.ErrAlreadyExists) {
		t.Fatalf("re-adding an id with another key: %v", err)
	}
	if err := ring.SetCurrent("nope"); !errors.Is(err, tablekit.ErrKeyNotFound) {
		t.Fatal(err)
	}
	if err := ring.Rotate("k2", k2); err != nil || ring.Current() != "k2" {
		t.Fatal(err, ring.Current())
	}
	id, key, err := ring.CurrentKey(ctx)
	if err != nil || id != "k2" || !bytes.Equal(key, k2) {
		t.Fatal(id, err)
	}
	key[0] ^= 1 // callers get copies
	if got, _ := ring.ResolveKey(ctx, "k2"); !bytes.Equal(got, k2) {
		t.Fatal("ResolveKey returned shared memory")
	}
	if err := ring.Remove("k2"); !errors.Is(err, tablekit.ErrInvalidInput) {
		t.Fatalf("removing the current key: %v", err)
	}
	if err := ring.Remove("k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := ring.ResolveKey(ctx, "k1"); !errors.Is(err, tablekit.ErrKeyNotFound) {
		t.Fatal(err)
	}

	// No key material in any rendering.
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("ring", "ring", &ring)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("ring", "ring", &ring)
	shown := fmt.Sprintf("%v %+v %#v", &ring, &ring, &ring) + logs.String()
	for _, k := range [][]byte{k1, k2} {
		for _, form := range []string{string(k), base64.StdEncoding.EncodeToString(k), fmt.Sprint(k), fmt.Sprintf("%x", k)} {
			if strings.Contains(shown, form) {
				t.Fatalf("a key shows in %s", shown)
			}
		}
	}
	if !strings.Contains(shown, "k2") {
		t.Fatalf("rendering does not show the key ids: %s", shown)
	}
}

func TestKeyRingConcurrent(t *testing.T) {
	ring := new(keyring.KeyRing)
	ring.Add("k0", keyring.GenerateKey())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				if i == 0 {
					ring.Rotate(fmt.Sprintf("k%d", j+1), keyring.GenerateKey())
					continue
				}
				id, _, err := ring.CurrentKey(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := ring.ResolveKey(context.Background(), id); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

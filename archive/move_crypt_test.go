package archive_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/archive"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
	"github.com/tablekit/tablekit/keyring"
)

// SecretEmployee has client-side encrypted fields.
type SecretEmployee struct {
	Department string      `table:",pk"`
	ID         string      `table:",rk"`
	Name       string      `table:"Name"`
	SSN        string      `table:"SSN,encrypt"`
	Salary     int64       `table:"Salary,encrypt"`
	ETag       azcore.ETag `table:",etag"`
}

// cryptTable creates a table for t with the given encryption (nil: none)
// and deletes it when t ends.
func cryptTable[T any](t *testing.T, acct *tablekit.Account, name string, enc *tablekit.Encryption) *tablekit.Table[T] {
	t.Helper()
	tbl, err := tablekit.OpenTable[T](acct, name, &tablekit.TableOptions{Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.CreateIfNotExists(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := tbl.DeleteTable(ctx); err != nil && !errors.Is(err, tablekit.ErrNotFound) {
			t.Errorf("delete table %s: %v", tbl.Name(), err)
		}
	})
	return tbl
}

// Encrypted entities survive an archive move, through the worker: each is
// decrypted once when read from Current and encrypted once, for its new
// keys, when written to Archive. The archive holds ciphertext (never the
// plaintext), and a Table with the same encryption reads the original
// values back.
func TestMoveEncryptedEntities(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	ring := new(keyring.KeyRing)
	if err := ring.Add("k1", keyring.GenerateKey()); err != nil {
		t.Fatal(err)
	}
	enc := &tablekit.Encryption{Keys: ring}
	currentName, archiveName := testenv.TableName(t), testenv.TableName(t)
	current := cryptTable[SecretEmployee](t, acct, currentName, enc)
	archived := cryptTable[SecretEmployee](t, acct, archiveName, enc)

	emps := []SecretEmployee{
		{Department: "Sales", ID: "000223", Name: "Jon Jones", SSN: "078-05-1120", Salary: 90000},
		{Department: "Sales", ID: "000123", Name: "Lisa Jones", SSN: "219-09-9999", Salary: 85000},
		{Department: "Marketing", ID: "000150", Name: "Bea Jones", SSN: "457-55-5462", Salary: 70000},
	}
	for _, e := range emps {
		if _, err := current.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// The archive is partitioned by year: new keys, so the ciphertext
	// (bound to its entity's keys) must be made anew, not copied.
	mover := &archive.Mover[SecretEmployee]{Current: current, Archive: archived, Transform: func(v SecretEmployee) (SecretEmployee, error) {
		v.Department = "2025-" + v.Department
		return v, nil
	}}
	queue := testenv.NewQueue(t, acct)
	poison := acct.Queues().NewQueueClient(testenv.QueueName(t))
	t.Cleanup(func() { poison.Delete(context.Background(), nil) })
	client, err := archive.NewClient(queue, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range emps {
		if _, err := client.Enqueue(ctx, archive.MoveKind, archive.MoveRequest{PartitionKey: e.Department, RowKey: e.ID}, nil); err != nil {
			t.Fatal(err)
		}
	}
	mux := new(archive.Mux)
	if err := archive.HandleFunc(mux, archive.MoveKind, mover.Handle); err != nil {
		t.Fatal(err)
	}
	w, err := archive.OpenWorker(acct, queueName(queue), mux, &archive.WorkerOptions{
		VisibilityTimeout: time.Second, PoisonQueue: queueName(poison),
		Container:    testenv.ContainerName(t), // never used: no claim checks
		PollInterval: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w)
	waitFor(t, time.Minute, "the queue to empty", func() bool { return approxCount(t, queue) == 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if s := w.Stats(); s.Succeeded != int64(len(emps)) || s.Poisoned != 0 {
		t.Errorf("worker stats %+v, want %d succeeded and none poisoned", s, len(emps))
	}
	if p := drainPoison(t, poison); len(p) != 0 {
		t.Fatalf("poison queue holds %d messages: first %q", len(p), p[0].Error)
	}

	// Read back through a Table with the same encryption: the originals.
	for _, want := range emps {
		got, err := archived.Get(ctx, "2025-"+want.Department, want.ID)
		if err != nil {
			t.Fatalf("archived %s/%s: %v", want.Department, want.ID, err)
		}
		if got.Name != want.Name || got.SSN != want.SSN || got.Salary != want.Salary {
			t.Errorf("archived %s = %+v, want %+v", want.ID, got, want)
		}
		if _, err := current.Get(ctx, want.Department, want.ID); !errors.Is(err, tablekit.ErrNotFound) {
			t.Errorf("Current still holds %s: %v", want.ID, err)
		}
	}
	checkStoredEncrypted(t, acct, archiveName, ring, emps, func(e SecretEmployee) (string, string) { return "2025-" + e.Department, e.ID })
}

// checkStoredEncrypted reads the raw stored entities of table: each
// encrypted property must be one layer of tablekit ciphertext (decrypting
// it once gives the plaintext, not more ciphertext), and no plaintext may
// appear anywhere in the stored entity.
func checkStoredEncrypted(t *testing.T, acct *tablekit.Account, table string, ring *keyring.KeyRing, emps []SecretEmployee, keysOf func(SecretEmployee) (string, string)) {
	t.Helper()
	ctx := context.Background()
	raw, err := tablekit.OpenTable[tablekit.Entity](acct, table, nil)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := tablekit.OpenTable[tablekit.Entity](acct, table, &tablekit.TableOptions{Encryption: &tablekit.Encryption{Keys: ring, Properties: []string{"SSN", "Salary"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range emps {
		pk, rk := keysOf(want)
		e, err := raw.Get(ctx, pk, rk)
		if err != nil {
			t.Fatalf("raw read of %s/%s: %v", pk, rk, err)
		}
		for _, p := range []string{"SSN", "Salary"} {
			b, ok := e.Properties[p].([]byte)
			if !ok {
				t.Errorf("%s/%s: stored %s is %T, want encrypted Edm.Binary", pk, rk, p, e.Properties[p])
				continue
			}
			if id, err := tablekit.CiphertextKeyID(b); err != nil || id != "k1" {
				t.Errorf("%s/%s: stored %s is not tablekit ciphertext of key k1: %q, %v", pk, rk, p, id, err)
			}
			if bytes.Contains(b, []byte(want.SSN)) {
				t.Errorf("%s/%s: stored %s holds the plaintext", pk, rk, p)
			}
		}
		for name, v := range e.Properties {
			if s, ok := v.(string); ok && strings.Contains(s, want.SSN) {
				t.Errorf("%s/%s: property %s holds the SSN in plaintext", pk, rk, name)
			}
		}
		d, err := dec.Get(ctx, pk, rk)
		if err != nil {
			t.Fatalf("decrypting read of %s/%s: %v", pk, rk, err)
		}
		if d.Properties["SSN"] != want.SSN || d.Properties["Salary"] != want.Salary {
			t.Errorf("%s/%s decrypts once to SSN %v, Salary %v; want %q, %d (one layer of encryption)", pk, rk, d.Properties["SSN"], d.Properties["Salary"], want.SSN, want.Salary)
		}
	}
}

// A move that would store encrypted values in plaintext is refused before
// anything is written: an Archive that does not encrypt what Current
// encrypts, or a blob copy made with the default JSON encoding (which
// would hold the decrypted values).
func TestMoveRefusesToDecryptIntoPlaintext(t *testing.T) {
	ctx := context.Background()
	acct := testenv.Account(t, nil)
	ring := new(keyring.KeyRing)
	if err := ring.Add("k1", keyring.GenerateKey()); err != nil {
		t.Fatal(err)
	}
	enc := &tablekit.Encryption{Keys: ring, Properties: []string{"SSN"}}
	current := cryptTable[tablekit.Entity](t, acct, testenv.TableName(t), enc)
	plain := cryptTable[tablekit.Entity](t, acct, testenv.TableName(t), nil)
	e := tablekit.Entity{PartitionKey: "Sales", RowKey: "000223", Properties: map[string]any{"Name": "Jon Jones", "SSN": "078-05-1120"}}
	if _, err := current.Insert(ctx, e); err != nil {
		t.Fatal(err)
	}

	m := &archive.Mover[tablekit.Entity]{Current: current, Archive: plain}
	err := m.Move(ctx, "Sales", "000223")
	if !errors.Is(err, tablekit.ErrInvalidInput) || !errors.Is(err, archive.ErrPermanent) {
		t.Errorf("move to an Archive without encryption: %v, want a permanent ErrInvalidInput", err)
	}
	if got := countEntities(t, plain); got != 0 {
		t.Errorf("the unencrypted Archive holds %d entities after the refused move", got)
	}

	archived := cryptTable[tablekit.Entity](t, acct, testenv.TableName(t), enc)
	claims := testenv.NewContainer(t, acct)
	m = &archive.Mover[tablekit.Entity]{Current: current, Archive: archived, Blobs: claims}
	err = m.Move(ctx, "Sales", "000223")
	if !errors.Is(err, tablekit.ErrInvalidInput) || !errors.Is(err, archive.ErrPermanent) {
		t.Errorf("move with a default-encoded blob copy: %v, want a permanent ErrInvalidInput", err)
	}
	if got := countEntities(t, archived); got != 0 {
		t.Errorf("Archive holds %d entities after the refused move", got)
	}
	if _, err := getBlob(ctx, claims, "Sales/000223.json"); !errors.Is(err, tablekit.ErrNotFound) {
		t.Errorf("blob copy written by the refused move: %v", err)
	}
	if _, err := current.Get(ctx, "Sales", "000223"); err != nil {
		t.Errorf("Current lost the entity of a refused move: %v", err)
	}

	// With an encoder of its own the blob copy is the caller's decision.
	m.EncodeBlob = func(v tablekit.Entity) ([]byte, error) { return []byte(v.RowKey), nil }
	if err := m.Move(ctx, "Sales", "000223"); err != nil {
		t.Fatal(err)
	}
	got, err := archived.Get(ctx, "Sales", "000223")
	if err != nil || got.Properties["SSN"] != "078-05-1120" {
		t.Errorf("archived entity %+v, %v", got, err)
	}
}

func countEntities(t *testing.T, tbl *tablekit.Table[tablekit.Entity]) int {
	t.Helper()
	n := 0
	for _, err := range tbl.Query(context.Background(), tablekit.Filter{}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

package azurite_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/azurite"
)

// keysOf lists the keys a query returns, in order.
func keysOf(t *testing.T, c *aztables.Client, opts *aztables.ListEntitiesOptions) []string {
	t.Helper()
	var keys []string
	pager := c.NewListEntitiesPager(opts)
	for pager.More() {
		p, err := pager.NextPage(ctxFor(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entities {
			var k struct{ PartitionKey, RowKey string }
			if err := json.Unmarshal(e, &k); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k.PartitionKey+"/"+k.RowKey)
		}
	}
	return keys
}

func sasClient(t *testing.T, u string) *aztables.Client {
	t.Helper()
	opts := &aztables.ClientOptions{}
	opts.Retry.MaxRetries = -1
	c, err := aztables.NewClientWithNoCredential(u, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (env *frontEnv) testSAS(t *testing.T) {
	ctx := ctxFor(t)
	const table = "sasranges"
	owner := tableClient(t, env.srv.ConnectionString(), table)
	for _, k := range [][2]string{{"a", "1"}, {"b", "1"}, {"b", "2"}, {"c", "1"}, {"c", "2"}} {
		if _, err := owner.AddEntity(ctx, entity(k[0], k[1], nil), nil); err != nil {
			t.Fatal(err)
		}
	}
	all := aztables.SASPermissions{Read: true, Add: true, Update: true, Delete: true}

	t.Run("one partition", func(t *testing.T) {
		b := sasClient(t, sasURL(t, env.srv.Endpoints().Table, table, all, &[4]string{"b", "", "b", ""}))
		if _, err := b.GetEntity(ctx, "b", "1", nil); err != nil {
			t.Fatalf("in-range read: %v", err)
		}
		if _, err := b.AddEntity(ctx, entity("b", "3", nil), nil); err != nil {
			t.Fatalf("in-range insert: %v", err)
		}
		if _, err := b.DeleteEntity(ctx, "b", "3", nil); err != nil {
			t.Fatalf("in-range delete: %v", err)
		}
		// A point read outside the range is 404, as if the entity did not
		// exist (the .NET SDK's recording
		// ValidateSasCredentialsWithRowKeyAndPartitionKeyRanges); writes
		// outside it are 403.
		_, err := b.GetEntity(ctx, "a", "1", nil)
		re := wantError(t, "out-of-range read", err, 404, "ResourceNotFound")
		if re.RawResponse.Header.Get("Content-Type") == "" {
			t.Fatal("error without a content type")
		}
		_, err = b.AddEntity(ctx, entity("c", "9", nil), nil)
		wantError(t, "out-of-range insert", err, 403, "AuthorizationFailure")
		_, err = b.UpsertEntity(ctx, entity("a", "1", map[string]any{"X": 1}), nil)
		wantError(t, "out-of-range upsert", err, 403, "AuthorizationFailure")
		_, err = b.UpdateEntity(ctx, entity("c", "1", nil), &aztables.UpdateEntityOptions{IfMatch: to.Ptr(azcore.ETagAny), UpdateMode: aztables.UpdateModeMerge})
		wantError(t, "out-of-range merge", err, 403, "AuthorizationFailure")
		_, err = b.DeleteEntity(ctx, "a", "1", nil)
		wantError(t, "out-of-range delete", err, 403, "AuthorizationFailure")

		// Queries return only what lies in the range.
		if got := keysOf(t, b, nil); !slices.Equal(got, []string{"b/1", "b/2"}) {
			t.Fatalf("query of the whole table: %v", got)
		}
		f := "PartitionKey eq 'a' or RowKey eq '2'"
		if got := keysOf(t, b, &aztables.ListEntitiesOptions{Filter: &f}); !slices.Equal(got, []string{"b/2"}) {
			t.Fatalf("query %q: %v", f, got)
		}

		// A batch in another partition fails at its first action.
		_, err = b.SubmitTransaction(ctx, adds("c", 2, nil), nil)
		wantBatchError(t, "out-of-range batch", err, 403, "AuthorizationFailure", "0:This request is not authorized to perform this operation.")
		// An in-range batch passes the front. Azurite refuses every $batch
		// made with a table service SAS (with or without a range), so its
		// success cannot be seen here.
		before := env.srv.Front().Stats().SASRejected
		_, err = b.SubmitTransaction(ctx, adds("b", 2, map[string]any{"V": 1}), nil)
		if after := env.srv.Front().Stats().SASRejected; after != before {
			t.Fatalf("the front refused an in-range batch: %v", err)
		}
		if err != nil {
			var re *azcore.ResponseError
			if !errors.As(err, &re) || re.StatusCode != 403 || !strings.Contains(re.RawResponse.Header.Get("Content-Type"), "xml") {
				t.Fatalf("in-range batch: %v", err)
			}
			t.Logf("in-range batch passed the front; Azurite refuses a $batch under a table SAS (%d %s)", re.StatusCode, re.ErrorCode)
		}
		if n := count(t, owner, "PartitionKey eq 'c' and RowKey ge 'r'"); n != 0 {
			t.Fatalf("the refused batch stored %d entities", n)
		}
	})

	t.Run("composite range", func(t *testing.T) {
		// From (b, 2) to (c, 1): b/1 and c/2 lie outside.
		r := sasClient(t, sasURL(t, env.srv.Endpoints().Table, table, all, &[4]string{"b", "2", "c", "1"}))
		if got := keysOf(t, r, nil); !slices.Equal(got, []string{"b/2", "c/1"}) {
			t.Fatalf("query of the whole table: %v", got)
		}
		for _, k := range [][2]string{{"b", "2"}, {"c", "1"}} {
			if _, err := r.GetEntity(ctx, k[0], k[1], nil); err != nil {
				t.Fatalf("in-range read %v: %v", k, err)
			}
		}
		for _, k := range [][2]string{{"b", "1"}, {"c", "2"}, {"a", "1"}} {
			_, err := r.GetEntity(ctx, k[0], k[1], nil)
			wantError(t, "out-of-range read "+k[0]+"/"+k[1], err, 404, "ResourceNotFound")
		}
		// b/3 > b/2 and c/0 < c/1: inside, though their row keys are
		// outside srk..erk taken alone.
		for _, k := range [][2]string{{"b", "3"}, {"c", "0"}} {
			if _, err := r.UpsertEntity(ctx, entity(k[0], k[1], nil), nil); err != nil {
				t.Fatalf("in-range upsert %v: %v", k, err)
			}
		}
	})

	t.Run("signature still checked", func(t *testing.T) {
		u := sasURL(t, env.srv.Endpoints().Table, table, all, &[4]string{"b", "", "b", ""})
		widened := u[:len(u)-len("epk=b")] + "epk=z"
		_, err := sasClient(t, widened).GetEntity(ctx, "c", "1", nil)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != 403 {
			t.Fatalf("a token whose range was widened: want 403 from Azurite's signature check, got %v", err)
		}
	})

	t.Run("off", func(t *testing.T) {
		f := env.newFront(t, &azurite.FrontOptions{NoSASRanges: true})
		b := sasClient(t, sasURL(t, f.Endpoints().Table, table, all, &[4]string{"b", "", "b", ""}))
		if _, err := b.GetEntity(ctx, "a", "1", nil); err != nil {
			t.Fatalf("out-of-range read with ranges off (Azurite does not enforce them): %v", err)
		}
	})

	if s := env.srv.Front().Stats(); s.SASRejected == 0 || s.SASFiltered == 0 {
		t.Fatalf("stats: %+v", s)
	}
}

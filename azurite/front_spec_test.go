package azurite_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/tablekit/tablekit/azurite"
)

func TestParseFrontSpec(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want *azurite.FrontOptions
	}{
		{"", nil},
		{"off", nil},
		{"strict", &azurite.FrontOptions{Paging: &azurite.PagingOptions{}}},
		{"limits", &azurite.FrontOptions{NoSASRanges: true}},
		{"sas", &azurite.FrontOptions{NoLimits: true}},
		{"paging", &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Paging: &azurite.PagingOptions{}}},
		{"paging=9,strict", &azurite.FrontOptions{Paging: &azurite.PagingOptions{Seed: 9}}},
		{"strict,paging=9", &azurite.FrontOptions{Paging: &azurite.PagingOptions{Seed: 9}}},
		{"strict, latency=20ms", &azurite.FrontOptions{Latency: 20 * time.Millisecond, Paging: &azurite.PagingOptions{}}},
		{"throttle", &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Throttle: &azurite.ThrottleOptions{}}},
		{"strict,throttle=0.05", &azurite.FrontOptions{Throttle: &azurite.ThrottleOptions{Scale: 0.05}, Paging: &azurite.PagingOptions{}}},
		{"strict,cosmos", &azurite.FrontOptions{Cosmos: &azurite.CosmosOptions{}, Paging: &azurite.PagingOptions{}}},
		{"cosmos=7,limits", &azurite.FrontOptions{NoSASRanges: true, Cosmos: &azurite.CosmosOptions{Seed: 7}}},
	} {
		got, err := azurite.ParseFrontSpec(tc.spec)
		if err != nil {
			t.Errorf("%q: %v", tc.spec, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %+v, want %+v", tc.spec, got, tc.want)
		}
	}
	for _, bad := range []string{"loose", "strict=1", "throttle=0", "throttle=x", "latency", "latency=-1s", "cosmos=-1", "paging=x", "paging=-2", "strict,,"} {
		if o, err := azurite.ParseFrontSpec(bad); err == nil {
			t.Errorf("%q: accepted as %+v", bad, o)
		}
	}
}

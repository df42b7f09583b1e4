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
		{"strict", &azurite.FrontOptions{Paging: true}},
		{"limits", &azurite.FrontOptions{NoSASRanges: true}},
		{"sas", &azurite.FrontOptions{NoLimits: true}},
		{"paging", &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Paging: true}},
		{"paging=9,strict", &azurite.FrontOptions{Paging: true, Seed: 9}},
		{"strict,paging=9", &azurite.FrontOptions{Paging: true, Seed: 9}},
		{"strict, latency=20ms", &azurite.FrontOptions{Latency: 20 * time.Millisecond, Paging: true}},
		{"throttle", &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Throttle: &azurite.ThrottleOptions{}}},
		{"strict,throttle=0.05", &azurite.FrontOptions{Throttle: &azurite.ThrottleOptions{PartitionRate: 100, AccountRate: 1000}, Paging: true}},
		{"strict,cosmos", &azurite.FrontOptions{Cosmos: true, Paging: true}},
		{"cosmos=7,paging", &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Cosmos: true, Paging: true, Seed: 7}},
		{"paging=3,cosmos=3", &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Cosmos: true, Paging: true, Seed: 3}},
		{"cosmos=7,limits", &azurite.FrontOptions{NoSASRanges: true, Cosmos: true, Seed: 7}},
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
	for _, bad := range []string{"loose", "strict=1", "throttle=0", "throttle=x", "latency", "latency=-1s", "cosmos=-1", "paging=x", "paging=-2", "strict,,", "cosmos=1,paging=2"} {
		if o, err := azurite.ParseFrontSpec(bad); err == nil {
			t.Errorf("%q: accepted as %+v", bad, o)
		}
	}
}

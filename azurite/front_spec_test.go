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
		{"strict", &azurite.FrontOptions{}},
		{"limits", &azurite.FrontOptions{NoSASRanges: true}},
		{"sas", &azurite.FrontOptions{NoLimits: true}},
		{"strict, latency=20ms", &azurite.FrontOptions{Latency: 20 * time.Millisecond}},
		{"throttle", &azurite.FrontOptions{NoLimits: true, NoSASRanges: true, Throttle: &azurite.ThrottleOptions{}}},
		{"strict,throttle=0.05", &azurite.FrontOptions{Throttle: &azurite.ThrottleOptions{Scale: 0.05}}},
		{"strict,cosmos", &azurite.FrontOptions{Cosmos: &azurite.CosmosOptions{}}},
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
	for _, bad := range []string{"loose", "strict=1", "throttle=0", "throttle=x", "latency", "latency=-1s", "cosmos=-1", "strict,,"} {
		if o, err := azurite.ParseFrontSpec(bad); err == nil {
			t.Errorf("%q: accepted as %+v", bad, o)
		}
	}
}

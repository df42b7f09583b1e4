package chaos_test

import (
	"errors"
	"math"
	"testing"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/internal/testkit/chaos"
)

func TestNewRefusesBadConfig(t *testing.T) {
	bad := []*chaos.Config{
		{Reset: -0.1},
		{AnswerLost: 1.5},
		{Delay: math.NaN()},
		{Reset: 0.6, ServerBusy: 0.6},
		{MaxDelay: -1},
		{MaxFaults: -1},
		{Services: []string{"file"}},
		{Operations: []string{""}},
		chaos.Mixed(0.8),
	}
	for _, cfg := range bad {
		_, err := chaos.New(1, cfg)
		var ve *tablekit.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, tablekit.ErrInvalidInput) || ve.Op != "chaos.New" {
			t.Errorf("New(%+v) = %v, want a ValidationError", cfg, err)
		}
	}
	for _, cfg := range []*chaos.Config{nil, {}, chaos.Mixed(0.2), chaos.Mixed(2.0 / 3), {Reset: 1}} {
		if _, err := chaos.New(1, cfg); err != nil {
			t.Errorf("New(%+v): %v", cfg, err)
		}
	}
}

func TestKinds(t *testing.T) {
	for _, k := range chaos.Kinds() {
		if k.Fails() == (k == chaos.Delay) {
			t.Errorf("%s.Fails() = %v", k, k.Fails())
		}
		if k.Applied() != (k == chaos.AnswerLost || k == chaos.TimeoutAfter) {
			t.Errorf("%s.Applied() = %v", k, k.Applied())
		}
	}
}

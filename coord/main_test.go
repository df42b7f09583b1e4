package coord_test

import (
	"os"
	"testing"

	"github.com/tablekit/tablekit/internal/testenv"
)

func TestMain(m *testing.M) {
	if cfg := os.Getenv(contenderEnv); cfg != "" {
		os.Exit(contenderProcess(cfg))
	}
	testenv.Main(m)
}

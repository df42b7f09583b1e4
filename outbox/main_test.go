package outbox_test

import (
	"os"
	"testing"

	"github.com/tablekit/tablekit/internal/testenv"
)

func TestMain(m *testing.M) {
	if cfg := os.Getenv(workerEnv); cfg != "" {
		os.Exit(workerProcess(cfg))
	}
	testenv.Main(m)
}

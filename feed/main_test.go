package feed_test

import (
	"os"
	"testing"

	"github.com/tablekit/tablekit/internal/testenv"
)

func TestMain(m *testing.M) {
	if cfg := os.Getenv(relayEnv); cfg != "" {
		os.Exit(relayProcess(cfg))
	}
	if cfg := os.Getenv(appenderEnv); cfg != "" {
		os.Exit(appenderProcess(cfg))
	}
	testenv.Main(m)
}

package chaos_test

import (
	"os"
	"testing"

	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func TestMain(m *testing.M) {
	chaos.RunChild(testChildEnv, testChild)
	if os.Getenv(echoChildEnv) != "" {
		os.Exit(echoChild())
	}
	testenv.Main(m)
}

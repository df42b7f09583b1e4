package feed_test

import (
	"testing"

	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func TestMain(m *testing.M) {
	chaos.RunChild(relayEnv, relayProcess)
	chaos.RunChild(appenderEnv, appenderProcess)
	testenv.Main(m)
}

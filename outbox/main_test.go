package outbox_test

import (
	"testing"

	"github.com/tablekit/tablekit/internal/testkit/chaos"
	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func TestMain(m *testing.M) {
	chaos.RunChild(workerEnv, workerProcess)
	testenv.Main(m)
}

package outbox_test

import (
	"testing"

	"github.com/tablekit/tablekit/internal/chaos"
	"github.com/tablekit/tablekit/internal/testenv"
)

func TestMain(m *testing.M) {
	chaos.RunChild(workerEnv, workerProcess)
	testenv.Main(m)
}

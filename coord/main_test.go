package coord_test

import (
	"testing"

	"github.com/tablekit/tablekit/internal/chaos"
	"github.com/tablekit/tablekit/internal/testenv"
)

func TestMain(m *testing.M) {
	chaos.RunChild(contenderEnv, contenderProcess)
	testenv.Main(m)
}

package stream_test

import (
	"testing"

	"github.com/tablekit/tablekit/internal/testkit/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

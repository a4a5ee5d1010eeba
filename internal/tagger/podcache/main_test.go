package podcache_test

import (
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// shared is the package's control plane, started by the first test that
// needs one (the contract test); the others need none.
var shared testenv.Shared

func TestMain(m *testing.M) { testenv.Main(m, &shared) }

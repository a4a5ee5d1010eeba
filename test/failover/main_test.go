package failover

import (
	"os"
	"testing"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// TestMain sets controller-runtime's log (the EC2 client names a logger
// from it) to the tests' own: quiet unless TEST_LOG is set.
func TestMain(m *testing.M) {
	ctrllog.SetLogger(testenv.Logger())
	os.Exit(m.Run())
}

package testenv

import (
	"strings"

	"github.com/eni-operator/eni-operator/internal/ownership"
)

// OwnershipKeys is the key ring tests run the NodeENI controller with: a
// fixed key, so a test can sign the ENIs it makes as the operator would.
func OwnershipKeys() *ownership.KeyRing {
	k, err := ownership.NewKeyRing(map[string][]byte{"k-test": []byte(strings.Repeat("test-key-", 4))})
	if err != nil {
		panic(err) // a constant key of the right length
	}
	return k
}

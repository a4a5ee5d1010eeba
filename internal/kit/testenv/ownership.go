package testenv

import (
	"strings"

	"github.com/eni-operator/eni-operator/internal/ownership"
)

// OwnershipKeys is the key ring tests run the NodeENI controller with: a
// fixed key, so a test can sign the ENIs it makes as the operator would.
func OwnershipKeys() *ownership.KeyRing { return KeyRing("k-test") }

// KeyRing is a ring of the given key IDs, each key derived from its ID
// (tests only: fixed, so proofs are reproducible).
func KeyRing(ids ...string) *ownership.KeyRing {
	keys := map[string][]byte{}
	for _, id := range ids {
		keys[id] = []byte(strings.Repeat(id+"/", ownership.MinKeyBytes)[:ownership.MinKeyBytes])
	}
	k, err := ownership.NewKeyRing(keys)
	if err != nil {
		panic(err) // a test's own IDs
	}
	return k
}

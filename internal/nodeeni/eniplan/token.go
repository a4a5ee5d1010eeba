package eniplan

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// ClientToken derives CreateNetworkInterface's idempotency token from the
// create's nonce, recorded before the create (births.go). A create the
// SDK sends again (throttled, never sent) therefore returns the ENI the
// first attempt made wherever EC2 honours the token; a create tried again
// after a failure whose outcome is unknown gets a new nonce, and the ENI
// the first may have made is found by the old one.
func ClientToken(nonce string) string {
	h := sha256.Sum256([]byte("eni-operator.io/create\x00" + nonce))
	// "neni-" + 40 hex digits (160 bits): far from collisions, well within
	// the 64 characters EC2 accepts.
	return "neni-" + hex.EncodeToString(h[:20])
}

// VisibilityWindow is how long after its creation an ENI that EC2 calls
// NotFound is taken to be not yet visible rather than gone. EC2 is
// eventually consistent: a call right after CreateNetworkInterface may not
// know the new ENI. It usually settles within seconds; AWS advises
// retrying for up to a few minutes.
const VisibilityWindow = 2 * time.Minute

// MayBeUnseen tells whether an ENI that EC2 just called NotFound may only
// be unknown to it yet: it was created less than VisibilityWindow ago,
// going by the later of its creation-time tag and this process's last
// create answer. Otherwise the ENI is gone; treating it as gone too early
// would create a second ENI for the same purpose.
func MayBeUnseen(now, createdAt, answeredAt time.Time) bool {
	latest := createdAt
	if answeredAt.After(latest) {
		latest = answeredAt
	}
	return !latest.IsZero() && now.Sub(latest) < VisibilityWindow
}

package nodeeni

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// maxClientToken is EC2's limit on ClientToken length.
const maxClientToken = 64

// clientToken derives CreateNetworkInterface's idempotency token from
// what the ENI is for: the NodeENI (by UID, so a recreated NodeENI of the
// same name starts afresh), the want's node, instance and subnet, and the
// device index base. A create repeated after a crash or a lost answer
// therefore returns the ENI the first call made.
//
// attempt moves on when EC2 answers a token with an ENI that has since
// been deleted (the same node, subnet and index wanted again after a
// cleanup): AWS keeps answering a used token with its first result.
func clientToken(uid string, w want, base, attempt int) string {
	h := sha256.Sum256([]byte(strings.Join([]string{uid, w.Node, w.Instance, w.Subnet, strconv.Itoa(base), strconv.Itoa(attempt)}, "\x00")))
	// "neni-" + 40 hex digits (160 bits): far from collisions, well within
	// the 64 characters EC2 accepts.
	return "neni-" + hex.EncodeToString(h[:20])
}

// visibilityWindow is how long after its creation an ENI that EC2 calls
// NotFound is taken to be not yet visible rather than gone. EC2 is
// eventually consistent: a call right after CreateNetworkInterface may not
// know the new ENI. It usually settles within seconds; AWS advises
// retrying for up to a few minutes.
const visibilityWindow = 2 * time.Minute

// mayBeUnseen tells whether an ENI that EC2 just called NotFound may only
// be unknown to it yet: it was created less than visibilityWindow ago,
// going by the later of its creation-time tag and this process's last
// create answer (the tag holds the first attempt's time, which can be
// long before EC2 accepted one). Otherwise the ENI is gone; treating it
// as gone too early would create a second ENI for the same purpose.
func mayBeUnseen(now, createdAt, answeredAt time.Time) bool {
	latest := createdAt
	if answeredAt.After(latest) {
		latest = answeredAt
	}
	return !latest.IsZero() && now.Sub(latest) < visibilityWindow
}

package nodeeni

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// maxClientToken is EC2's limit on ClientToken length.
const maxClientToken = 64

// clientToken derives CreateNetworkInterface's idempotency token from
// what the ENI is for: the NodeENI (by UID, so a recreated NodeENI of the
// same name starts afresh), the node and its instance, the subnet and the
// device index base. A create repeated after a crash or a lost answer
// therefore returns the ENI the first call made.
//
// attempt moves on when EC2 answers a token with an ENI that has since
// been deleted (the same node, subnet and index wanted again after a
// cleanup): AWS keeps answering a used token with its first result.
func clientToken(uid, node, instance, subnet string, base, attempt int) string {
	h := sha256.Sum256([]byte(strings.Join([]string{uid, node, instance, subnet, strconv.Itoa(base), strconv.Itoa(attempt)}, "\x00")))
	// "neni-" + 40 hex digits (160 bits): far from collisions, well within
	// the 64 characters EC2 accepts.
	return "neni-" + hex.EncodeToString(h[:20])
}

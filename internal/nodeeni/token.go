package nodeeni

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"
)

// clientToken derives CreateNetworkInterface's idempotency token from the
// create's nonce, recorded before the create (births.go). A create the
// SDK sends again (throttled, never sent) therefore returns the ENI the
// first attempt made wherever EC2 honours the token; a create tried again
// after a failure whose outcome is unknown gets a new nonce, and the ENI
// the first may have made is found by the old one.
func clientToken(nonce string) string {
	h := sha256.Sum256([]byte("eni-operator.io/create\x00" + nonce))
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
// create answer. Otherwise the ENI is gone; treating it as gone too early
// would create a second ENI for the same purpose.
func mayBeUnseen(now, createdAt, answeredAt time.Time) bool {
	latest := createdAt
	if answeredAt.After(latest) {
		latest = answeredAt
	}
	return !latest.IsZero() && now.Sub(latest) < visibilityWindow
}

// answers remembers when EC2 answered this process's creates, by ENI,
// until the ENI is attached or gone.
type answers struct {
	mu sync.Mutex
	at map[string]time.Time
}

func newAnswers() *answers { return &answers{at: map[string]time.Time{}} }

func (t *answers) answer(id string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.at[id] = now
}

// last is when EC2 answered the ENI's create in this process (zero when
// it did not).
func (t *answers) last(id string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.at[id]
}

// done forgets an ENI attached or gone, keeping the memory bounded.
func (t *answers) done(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.at, id)
}

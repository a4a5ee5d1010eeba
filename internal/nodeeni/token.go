package nodeeni

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
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
//
// The purpose's variant (interface type and network card) is left out
// when empty, so tokens of plain ENIs are those earlier versions sent.
func clientToken(uid string, w want, p purpose, attempt int) string {
	parts := []string{uid, w.Node, w.Instance, w.Subnet, strconv.Itoa(p.base), strconv.Itoa(attempt)}
	if p.variant != "" {
		parts = append(parts, p.variant)
	}
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
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

// tokens remembers, per ENI-to-be, which ClientToken attempt is current
// and the creation time its tags carry: a create retried in this process
// must send exactly the same parameters, or EC2 refuses the token. Both
// are kept until the ENI is attached, since until then a create may be
// repeated (an inventory taken before EC2 showed the new ENI drops it
// from the view). answered is when EC2 last answered the create.
type tokens struct {
	mu       sync.Mutex
	attempt  map[string]int
	created  map[string]time.Time
	answered map[string]time.Time
	// unseen is when EC2 first refused the key's current token as used
	// with other parameters while no Describe showed its ENI.
	unseen map[string]time.Time
}

func newTokens() *tokens {
	return &tokens{attempt: map[string]int{}, created: map[string]time.Time{}, answered: map[string]time.Time{},
		unseen: map[string]time.Time{}}
}

// unseenSince returns when the key's token was first found used by an
// ENI nobody can see, recording now if this is the first time.
func (t *tokens) unseenSince(key string, now time.Time) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.unseen[key]; ok {
		return s
	}
	t.unseen[key] = now
	return now
}

func tokenKey(uid string, w want, p purpose) string {
	return fmt.Sprintf("%s|%s|%s|%s|%d|%s", uid, w.Node, w.Instance, w.Subnet, p.base, p.variant)
}

// purpose is what a NodeENI's ENIs are, beside node and subnet: the
// device index base and the settings variant (eniSettings.variant) EC2
// cannot change on an ENI.
type purpose struct {
	base    int
	variant string
}

func purposeOf(spec *v1alpha1.NodeENISpec) purpose {
	return purpose{base: int(spec.DeviceIndex), variant: settingsOf(spec).variant()}
}

// current returns the attempt and the creation time for a key.
func (t *tokens) current(key string) (int, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.attempt[key]
	ck := fmt.Sprintf("%s|%d", key, a)
	c, ok := t.created[ck]
	if !ok {
		c = time.Now().UTC().Truncate(time.Second)
		t.created[ck] = c
	}
	return a, c
}

// burn moves a key to its next attempt: its token names a deleted ENI.
func (t *tokens) burn(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forget(key)
	t.attempt[key]++
}

// answer records that EC2 answered the key's create with an ENI at now.
func (t *tokens) answer(key string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.answered[key] = now
}

// lastAnswer is when EC2 last answered the key's create in this process
// (zero when it did not).
func (t *tokens) lastAnswer(key string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.answered[key]
}

// done forgets a key whose ENI is attached, keeping the memory bounded.
func (t *tokens) done(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forget(key)
}

// forget drops what is kept of the key's current attempt; t.mu is held.
func (t *tokens) forget(key string) {
	delete(t.created, fmt.Sprintf("%s|%d", key, t.attempt[key]))
	delete(t.answered, key)
	delete(t.unseen, key)
}

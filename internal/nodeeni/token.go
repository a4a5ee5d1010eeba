package nodeeni

import (
	"sync"
	"time"
)

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

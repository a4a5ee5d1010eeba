package nodeeni

import (
	"sync"
)

// distrustLog remembers, per scope (the inventory, a NodeENI, the
// collector), why each untrusted ENI was distrusted, so each is reported
// once per reason change rather than on every pass.
type distrustLog struct {
	mu     sync.Mutex
	scopes map[string]map[string]string
}

func newDistrustLog() *distrustLog { return &distrustLog{scopes: map[string]map[string]string{}} }

// update replaces a scope's untrusted ENIs (ID -> reason) and returns the
// IDs whose reason is new or changed since the last update.
func (d *distrustLog) update(scope string, now map[string]string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.scopes[scope]
	var changed []string
	for id, reason := range now {
		if old[id] != reason {
			changed = append(changed, id)
		}
	}
	if len(now) == 0 {
		delete(d.scopes, scope)
	} else {
		d.scopes[scope] = now
	}
	return changed
}

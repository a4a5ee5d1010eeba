package tagger

import "sync"

// waiting remembers the pods refused as Conflict on an ENI, so that the
// removal of another pod's record there (the pod gone, or its annotation
// removed) brings them back at once. Without it nothing would: a pod in
// Conflict has no record, so neither the inventory's drift check nor a
// watch event of its own looks at it again. A pod leaves when it gets
// any other outcome, when it is forgotten, or when its ENI is released;
// the entries are bounded by the pods in Conflict.
type waiting struct {
	mu    sync.Mutex
	byENI map[string]map[string]struct{}
	eniOf map[string]string
}

// wait records that pod waits on eni (and on no other ENI).
func (w *waiting) wait(pod, eni string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.eniOf[pod] == eni {
		return
	}
	w.stopLocked(pod)
	if w.byENI == nil {
		w.byENI, w.eniOf = map[string]map[string]struct{}{}, map[string]string{}
	}
	if w.byENI[eni] == nil {
		w.byENI[eni] = map[string]struct{}{}
	}
	w.byENI[eni][pod] = struct{}{}
	w.eniOf[pod] = eni
}

// stop forgets that pod waits.
func (w *waiting) stop(pod string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopLocked(pod)
}

func (w *waiting) stopLocked(pod string) {
	eni, ok := w.eniOf[pod]
	if !ok {
		return
	}
	delete(w.eniOf, pod)
	delete(w.byENI[eni], pod)
	if len(w.byENI[eni]) == 0 {
		delete(w.byENI, eni)
	}
}

// release returns the pods waiting on eni and forgets them: each is
// reconciled again and waits anew if the ENI is still not its to tag.
func (w *waiting) release(eni string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	pods := make([]string, 0, len(w.byENI[eni]))
	for pod := range w.byENI[eni] {
		pods = append(pods, pod)
		delete(w.eniOf, pod)
	}
	delete(w.byENI, eni)
	return pods
}

// pods returns every waiting pod.
func (w *waiting) pods() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	pods := make([]string, 0, len(w.eniOf))
	for pod := range w.eniOf {
		pods = append(pods, pod)
	}
	return pods
}

package emulator

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// EC2's eventual consistency beyond a new ENI's visibility
// (Options.VisibilityDelay): "the results of an API command you run that
// affects your EC2 resources might not be immediately visible to all
// subsequent commands you run" (EC2 API reference, "Eventual
// consistency"). The emulator applies every write to the true state at
// once — so the writer's own later writes, validations and conflicts see
// it, as EC2's do — and lags only what Describe calls show:
//
//   - tags (TagDelay): after CreateTags or DeleteTags on an ENI, Describe
//     calls (DescribeNetworkInterfaces results and tag filters,
//     DescribeTags) show the ENI's previous tags until the delay passes;
//     several writes become visible one after the other, in order;
//   - attachments (AttachDelay): AttachNetworkInterface leaves the
//     attachment "attaching" for the delay, then "attached" (detach was
//     already asynchronous: DetachDelay);
//   - deletes (DeleteDelay): a deleted ENI is still described, as it was
//     when deleted, for the delay; every other call already answers
//     InvalidNetworkInterfaceID.NotFound and its addresses are free.
//
// Every delay is zero (off) by default.

// lagConfig holds the delays of the eventual-consistency model besides
// VisibilityDelay.
type lagConfig struct {
	tag, attach, delete time.Duration
}

// lagConfigOf reads the delays from construction options.
func lagConfigOf(o Options) lagConfig {
	return lagConfig{tag: o.TagDelay, attach: o.AttachDelay, delete: o.DeleteDelay}
}

// checkLags refuses negative delays.
func (c Config) checkLags() error {
	for name, d := range map[string]*Duration{"visibilityDelay": c.VisibilityDelay, "detachDelay": c.DetachDelay,
		"tagDelay": c.TagDelay, "attachDelay": c.AttachDelay, "deleteDelay": c.DeleteDelay} {
		if d != nil && d.Duration < 0 {
			return fmt.Errorf("%s must be >= 0, got %v", name, d.Duration)
		}
	}
	return nil
}

// applyLags sets the delays a Config gives, leaving the others alone.
func (l *lagConfig) applyLags(c Config) {
	if c.TagDelay != nil {
		l.tag = c.TagDelay.Duration
	}
	if c.AttachDelay != nil {
		l.attach = c.AttachDelay.Duration
	}
	if c.DeleteDelay != nil {
		l.delete = c.DeleteDelay.Duration
	}
}

// lagState is what the world holds for lagging reads; it costs nothing
// while every delay is zero.
type lagState struct {
	// shown is the tag set Describe calls show for a resource with tag
	// writes not yet visible; pending counts those writes.
	shown   map[*resource]map[string]string
	pending map[*resource]int
	// tagQueue holds the tag writes not yet visible, oldest first.
	tagQueue []tagChange
	// attaching maps an ENI to when its attachment becomes "attached".
	attaching map[string]time.Time
	// ghosts are deleted ENIs still described, until their time.
	ghosts map[string]ghost
}

type tagChange struct {
	due   time.Time
	r     *resource
	after map[string]string
}

type ghost struct {
	n     *eni
	until time.Time
}

func newLagState() lagState {
	return lagState{shown: map[*resource]map[string]string{}, pending: map[*resource]int{},
		attaching: map[string]time.Time{}, ghosts: map[string]ghost{}}
}

// writeTags applies change to an ENI's tags; with a tag delay, Describe
// calls keep showing the tags from before until the delay passes.
func (w *world) writeTags(r *resource, env callEnv, change func(tags map[string]string)) {
	if _, isENI := w.enis[r.id]; env.lag.tag <= 0 || !isENI {
		change(r.tags)
		return
	}
	if _, ok := w.lag.shown[r]; !ok {
		w.lag.shown[r] = maps.Clone(r.tags)
	}
	change(r.tags)
	w.lag.pending[r]++
	w.lag.tagQueue = append(w.lag.tagQueue, tagChange{due: env.now.Add(env.lag.tag), r: r, after: maps.Clone(r.tags)})
}

// describedTags are the tags Describe calls show for a resource now.
func (w *world) describedTags(r *resource) map[string]string {
	if t, ok := w.lag.shown[r]; ok {
		return t
	}
	return r.tags
}

// startAttaching leaves a new attachment "attaching" for the attach delay.
func (w *world) startAttaching(n *eni, env callEnv) {
	if env.lag.attach <= 0 {
		return
	}
	n.attachment.status = "attaching"
	w.lag.attaching[n.id] = env.now.Add(env.lag.attach)
}

// leaveGhost keeps a deleted ENI described for the delete delay.
func (w *world) leaveGhost(n *eni, env callEnv) {
	if env.lag.delete <= 0 {
		return
	}
	g := *n
	g.tags = maps.Clone(w.describedTags(&n.resource))
	w.lag.ghosts[n.id] = ghost{n: &g, until: env.now.Add(env.lag.delete)}
}

// advanceLags makes visible what has waited long enough.
func (w *world) advanceLags(now time.Time) {
	done := 0
	for _, c := range w.lag.tagQueue {
		if now.Before(c.due) {
			break
		}
		done++
		w.lag.pending[c.r]--
		if w.lag.pending[c.r] <= 0 {
			delete(w.lag.pending, c.r)
			delete(w.lag.shown, c.r)
			continue
		}
		w.lag.shown[c.r] = c.after
	}
	w.lag.tagQueue = w.lag.tagQueue[done:]
	for id, due := range w.lag.attaching {
		if now.Before(due) {
			continue
		}
		if n, ok := w.enis[id]; ok && n.attachment != nil && n.attachment.status == "attaching" {
			n.attachment.status = "attached"
		}
		delete(w.lag.attaching, id)
	}
	for id, g := range w.lag.ghosts {
		if !now.Before(g.until) {
			delete(w.lag.ghosts, id)
		}
	}
}

// describedENIs are the ENIs Describe calls list, deleted ones still
// described included, in creation order.
func (w *world) describedENIs() []*eni {
	out := w.sortedENIs()
	if len(w.lag.ghosts) == 0 {
		return out
	}
	for _, g := range w.lag.ghosts {
		out = append(out, g.n)
	}
	slices.SortFunc(out, func(a, b *eni) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// describedENI finds an ENI by ID for Describe calls, which still see a
// deleted ENI for the delete delay.
func (w *world) describedENI(id string) (*eni, *apiError) {
	n, err := w.lookupENI(id)
	if err != nil {
		if g, ok := w.lag.ghosts[id]; ok {
			return g.n, nil
		}
	}
	return n, err
}

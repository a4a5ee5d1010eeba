package podaddrs

import (
	"net/netip"
	"testing"
	"time"
)

// A claim EC2 refuses at every try is tried 4 times in its first 5
// minutes and twice an hour once refused for long, however often its
// node's passes run (here every 10 s).
func TestRefusedClaimBacksOff(t *testing.T) {
	b := newBackoffs()
	k := claimKey{"ns/p1", netip.MustParseAddr("10.0.1.20")}
	claimed := map[claimKey]bool{k: true}
	start := time.Unix(1_000_000, 0)
	var calls []time.Duration
	for at := time.Duration(0); at < 3*time.Hour; at += 10 * time.Second {
		now := start.Add(at)
		if active, _ := b.active("n0", now); len(active) == 0 {
			calls = append(calls, at)
			b.update("n0", map[claimKey]refusal{k: {Pod: k.Pod, Addr: k.Addr, Reason: ReasonAssignFailed}}, claimed, nil, now)
		} else {
			b.update("n0", nil, claimed, nil, now)
		}
	}
	within := func(from, to time.Duration) int {
		n := 0
		for _, c := range calls {
			if c >= from && c < to {
				n++
			}
		}
		return n
	}
	if n := within(0, 5*time.Minute); n != 4 {
		t.Errorf("%d calls in the first 5 minutes, want 4 (at 0, 30 s, 90 s, 210 s): %v", n, calls)
	}
	if n := within(2*time.Hour, 3*time.Hour); n != 2 {
		t.Errorf("%d calls in the third hour, want 2: %v", n, calls)
	}
}

// A claim no pod makes any more, or assigned since, is forgotten; one
// whose address another ENI let go is due at once, on every node.
func TestBackoffForgetsAndReleases(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	a, c := netip.MustParseAddr("10.0.1.20"), netip.MustParseAddr("10.0.1.21")
	k1, k2, k3 := claimKey{"ns/p1", a}, claimKey{"ns/p2", c}, claimKey{"ns/p3", a}
	refused := func(ks ...claimKey) map[claimKey]refusal {
		m := map[claimKey]refusal{}
		for _, k := range ks {
			m[k] = refusal{Pod: k.Pod, Addr: k.Addr}
		}
		return m
	}
	b := newBackoffs()
	b.update("n0", refused(k1, k2), map[claimKey]bool{k1: true, k2: true}, nil, now)
	b.update("n1", refused(k3), map[claimKey]bool{k3: true}, nil, now)
	if active, next := b.active("n0", now); len(active) != 2 || !next.Equal(now.Add(backoffBase)) {
		t.Fatalf("active %v, next %v", active, next)
	}
	b.update("n0", nil, map[claimKey]bool{k1: true}, nil, now) // p2 no longer claims
	if active, _ := b.active("n0", now); len(active) != 1 {
		t.Errorf("after p2's claim went: %v", active)
	}
	b.released(map[netip.Addr]bool{a: true})
	for _, node := range []string{"n0", "n1"} {
		if active, _ := b.active(node, now); len(active) != 0 {
			t.Errorf("%s after %s was released: %v", node, a, active)
		}
	}
	b.update("n0", refused(k2), map[claimKey]bool{k2: true}, nil, now)
	b.update("n0", nil, map[claimKey]bool{k2: true}, map[netip.Addr]bool{c: true}, now.Add(time.Hour))
	b.update("n0", refused(k2), map[claimKey]bool{k2: true}, nil, now.Add(time.Hour))
	if _, next := b.active("n0", now.Add(time.Hour)); !next.Equal(now.Add(time.Hour + backoffBase)) {
		t.Errorf("a claim assigned and refused again starts over: due %v", next.Sub(now))
	}
}

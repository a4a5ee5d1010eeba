package podaddrs

import (
	"net/netip"
	"slices"
	"testing"
)

func TestWaiters(t *testing.T) {
	w := newWaiters()
	queued := func() []string {
		var out []string
		for {
			select {
			case e := <-w.queue:
				out = append(out, e.Object.GetName())
			default:
				slices.Sort(out)
				return out
			}
		}
	}
	a, b, c := netip.MustParseAddr("10.0.1.1"), netip.MustParseAddr("10.0.1.2"), netip.MustParseAddr("10.0.1.3")
	w.wait("n1", []netip.Addr{a, b})
	w.wait("n2", []netip.Addr{c})
	w.released(map[netip.Addr]bool{a: true, b: true})
	if got := queued(); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("queued %v for two addresses n1 waits for, want n1 once", got)
	}
	w.wait("n1", []netip.Addr{b}) // its next pass got a
	w.released(map[netip.Addr]bool{a: true})
	if got := queued(); len(got) != 0 {
		t.Errorf("queued %v for an address nobody waits for", got)
	}
	w.forget("n2")
	w.released(map[netip.Addr]bool{b: true, c: true})
	if got := queued(); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("queued %v, want n1 only (n2 forgotten)", got)
	}
}

package podranges

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestPickTheHighestFreeBlock(t *testing.T) {
	for _, c := range []struct {
		name, subnet string
		bits         int
		taken        []netip.Prefix
		want         string // "" none
	}{
		{"the top block holds the subnet's last address: the one below", "10.0.40.0/24", 26, nil, "10.0.40.128/26"},
		{"a block with an address in use is skipped", "10.0.40.0/24", 26, prefixes("10.0.40.130/32"), "10.0.40.64/26"},
		{"a block overlapping a reservation is skipped", "10.0.40.0/24", 26, prefixes("10.0.40.130/32", "10.0.40.64/27"), ""},
		{"a /28 below an ENI's address", "10.0.40.0/24", 28, prefixes("10.0.40.230/32"), "10.0.40.208/28"},
		{"a delegated prefix counts as in use", "10.0.40.0/24", 28, prefixes("10.0.40.224/28", "10.0.40.208/28"), "10.0.40.192/28"},
		{"the first block holds .0-.3: never", "10.0.40.0/28", 28, nil, ""},
		{"the whole subnet: never", "10.0.40.0/24", 24, nil, ""},
		{"a block larger than the subnet: never", "10.0.40.0/24", 20, nil, ""},
		{"no block left", "10.0.40.0/26", 28, prefixes("10.0.40.16/28", "10.0.40.32/28"), ""},
		{"IPv6: never", "2600:1f18::/64", 28, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := pick(netip.MustParsePrefix(c.subnet), c.bits, c.taken)
			s := ""
			if ok {
				s = got.String()
			}
			if s != c.want {
				t.Errorf("picked %q, want %q", s, c.want)
			}
		})
	}
}

func TestDecideKeepsOnePerSubnetOfTheWantedSize(t *testing.T) {
	r := func(id, subnet, cidr string) reservation {
		return reservation{ID: id, Subnet: subnet, CIDR: netip.MustParsePrefix(cidr)}
	}
	for _, c := range []struct {
		name    string
		bits    int
		subnets []string
		mine    []reservation
		want    string
	}{
		{"none yet: one per subnet", 26, []string{"s1", "s2"}, nil, "keep [] create [s1 s2] delete []"},
		{"in place", 26, []string{"s1"}, []reservation{r("r1", "s1", "10.0.1.128/26")}, "keep [r1] create [] delete []"},
		{"another size: replaced", 27, []string{"s1"}, []reservation{r("r1", "s1", "10.0.1.128/26")}, "keep [] create [s1] delete [r1]"},
		{"a subnet left: its reservation deleted", 26, []string{"s1"}, []reservation{r("r1", "s1", "10.0.1.128/26"), r("r2", "s2", "10.0.2.128/26")},
			"keep [r1] create [] delete [r2]"},
		{"two in one subnet (a crash between create and record): one kept", 26, []string{"s1"},
			[]reservation{r("r1", "s1", "10.0.1.128/26"), r("r2", "s1", "10.0.1.64/26")}, "keep [r1] create [] delete [r2]"},
		{"no longer asked, or the NodeENI going: all deleted", 0, []string{"s1"}, []reservation{r("r1", "s1", "10.0.1.128/26")},
			"keep [] create [] delete [r1]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := decide(c.bits, c.subnets, c.mine)
			ids := func(rs []reservation) []string {
				out := []string{}
				for _, r := range rs {
					out = append(out, r.ID)
				}
				return out
			}
			create := p.Create
			if create == nil {
				create = []string{}
			}
			if got := fmt.Sprintf("keep %v create %v delete %v", ids(p.Keep), create, ids(p.Delete)); got != c.want {
				t.Errorf("%s, want %s", got, c.want)
			}
		})
	}
}

// A NodeENI whose reservations keep failing is tried again as long after
// as it has been failing: 30 s at first, at most the resync apart.
func TestRetryDelayGrowsWithTheFailure(t *testing.T) {
	const floor, ceiling = 30 * time.Second, 10 * time.Minute
	var at time.Duration // since the failure began, which never ends
	var tries []time.Duration
	for at < time.Hour {
		tries = append(tries, at)
		at += retryDelay(at, floor, ceiling)
	}
	want := []time.Duration{0, 30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute,
		26 * time.Minute, 36 * time.Minute, 46 * time.Minute, 56 * time.Minute}
	if fmt.Sprint(tries) != fmt.Sprint(want) {
		t.Errorf("tries at %v, want %v", tries, want)
	}
}

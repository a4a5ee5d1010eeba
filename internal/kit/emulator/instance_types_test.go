package emulator

import (
	"encoding/json"
	"slices"
	"testing"
)

// A world's instance type written before types had cards, IPv6 and EFA
// attributes loads as one card with every interface, IPv6 as many as
// IPv4, no EFA; the new attributes load as given.
func TestInstanceTypeSpecDefaults(t *testing.T) {
	var old, full InstanceTypeSpec
	if err := json.Unmarshal([]byte(`{"name":"x1.old","maximumNetworkInterfaces":3,"ipv4AddressesPerInterface":6}`), &old); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"name":"x1.new","maximumNetworkInterfaces":4,"ipv6AddressesPerInterface":2,`+
		`"ipv6Supported":false,"efaSupported":true,"networkCards":[2,2]}`), &full); err != nil {
		t.Fatal(err)
	}
	o, f := fromSpec(old), fromSpec(full)
	if !slices.Equal(o.cards, []int{3}) || o.ipv6PerInterface != 6 || !o.ipv6Supported || o.efaSupported {
		t.Errorf("old spec: %+v, want one card of 3, 6 IPv6 per interface, IPv6, no EFA", o)
	}
	if !slices.Equal(f.cards, []int{2, 2}) || f.ipv6PerInterface != 2 || f.ipv6Supported || !f.efaSupported {
		t.Errorf("full spec: %+v", f)
	}
	if limit, ok := f.card(1); !ok || limit != 2 {
		t.Errorf("card 1: %d %v", limit, ok)
	}
	if _, ok := f.card(2); ok {
		t.Error("card 2 of a two-card type exists")
	}
}

// Every built-in type's cards add up to its interface limit.
func TestDefaultInstanceTypesCards(t *testing.T) {
	for name, it := range defaultInstanceTypes() {
		sum := 0
		for _, n := range it.cards {
			sum += n
		}
		if sum != it.maxENIs {
			t.Errorf("%s: cards %v add up to %d, not %d", name, it.cards, sum, it.maxENIs)
		}
	}
}

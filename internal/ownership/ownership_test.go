package ownership

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func ring(t *testing.T, keys map[string]string) *KeyRing {
	t.Helper()
	m := map[string][]byte{}
	for id, k := range keys {
		m[id] = []byte(k)
	}
	r, err := NewKeyRing(m)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var (
	keyA = strings.Repeat("a", 32)
	keyB = strings.Repeat("b", 32)
)

func claim() Claim {
	return Claim{ENI: "eni-0001", Cluster: "prod", NodeENI: "multus", NodeENIUID: "uid-1", Node: "node-a", Instance: "i-1",
		DeviceIndex: "1", DeviceIndexBase: "1", CreatedAt: "2026-11-27T01:00:00Z"}
}

func TestProofBindsEveryField(t *testing.T) {
	r := ring(t, map[string]string{"k1": keyA})
	proof := r.Sign(claim())
	if id, err := r.Verify(claim(), proof); err != nil || id != "k1" {
		t.Fatalf("own proof: key %q, %v", id, err)
	}
	changes := map[string]func(*Claim){
		"another ENI (a complete copy of the tags)": func(c *Claim) { c.ENI = "eni-0002" },
		"cluster":                         func(c *Claim) { c.Cluster = "other" },
		"NodeENI name":                    func(c *Claim) { c.NodeENI = "x" },
		"NodeENI UID":                     func(c *Claim) { c.NodeENIUID = "uid-2" },
		"node":                            func(c *Claim) { c.Node = "node-b" },
		"instance":                        func(c *Claim) { c.Instance = "i-2" },
		"device index":                    func(c *Claim) { c.DeviceIndex = "2" },
		"device index base":               func(c *Claim) { c.DeviceIndexBase = "2" },
		"backdated created-at":            func(c *Claim) { c.CreatedAt = "2020-01-01T00:00:00Z" },
		"a boundary moved between fields": func(c *Claim) { c.ENI, c.Cluster = "eni-0001p", "rod" },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			c := claim()
			change(&c)
			if _, err := r.Verify(c, proof); err != ErrMismatch {
				t.Fatalf("Verify = %v, want ErrMismatch", err)
			}
		})
	}
}

func TestProofFromAnotherKeyOrMalformed(t *testing.T) {
	r := ring(t, map[string]string{"k1": keyA})
	other := ring(t, map[string]string{"k1": keyB})
	if _, err := r.Verify(claim(), other.Sign(claim())); err != ErrMismatch {
		t.Errorf("proof under another secret with the same ID: %v, want ErrMismatch", err)
	}
	unknown := ring(t, map[string]string{"k9": keyB})
	if _, err := r.Verify(claim(), unknown.Sign(claim())); err != ErrUnknownKey {
		t.Errorf("proof under an unknown key ID: %v, want ErrUnknownKey", err)
	}
	for _, bad := range []string{"", "v1", "v1.k1", "v1.k1.", "v2.k1." + strings.Repeat("A", 43), "v1.k1.!!!", "v1.k1.AAAA"} {
		if _, err := r.Verify(claim(), bad); err != ErrMalformed {
			t.Errorf("Verify(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

func TestRotationKeepsOldProofsValid(t *testing.T) {
	old := ring(t, map[string]string{"k20260101t000000": keyA})
	proof := old.Sign(claim())
	rotated := ring(t, map[string]string{"k20260101t000000": keyA, "k20261127t000000": keyB})
	if rotated.Current() != "k20261127t000000" {
		t.Fatalf("current = %s, want the later key", rotated.Current())
	}
	if id, err := rotated.Verify(claim(), proof); err != nil || id != "k20260101t000000" {
		t.Fatalf("old proof after rotation: key %q, %v", id, err)
	}
	if id, err := rotated.Verify(claim(), rotated.Sign(claim())); err != nil || id != rotated.Current() {
		t.Fatalf("new proof: key %q, %v", id, err)
	}
}

func TestNewKeyRingRefusesWeakOrBadKeys(t *testing.T) {
	for name, keys := range map[string]map[string][]byte{
		"empty":     {},
		"short key": {"k1": []byte("short")},
		"bad ID":    {"K 1": []byte(keyA)},
	} {
		if _, err := NewKeyRing(keys); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	id, key, err := NewKey(time.Date(2026, 11, 27, 1, 2, 3, 0, time.UTC))
	if err != nil || id != "k20261127t010203" || len(key) != MinKeyBytes {
		t.Fatalf("NewKey = %q, %d bytes, %v", id, len(key), err)
	}
	if _, err := NewKeyRing(map[string][]byte{id: key}); err != nil {
		t.Fatalf("a new key is refused: %v", err)
	}
}

// A reservation's proof binds its cluster, NodeENI, subnet and CIDR: a
// copy onto a reservation of another CIDR, subnet or NodeENI fails, and
// it never verifies as an ENI's proof.
func TestReservationProofBindsItsCIDR(t *testing.T) {
	id, key, err := NewKey(time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	ring, err := NewKeyRing(map[string][]byte{id: key})
	if err != nil {
		t.Fatal(err)
	}
	c := ReservationClaim{Cluster: "prod", NodeENIUID: "uid-1", Subnet: "subnet-1", CIDR: "10.0.40.192/26"}
	proof := ring.SignReservation(c)
	if _, err := ring.VerifyReservation(c, proof); err != nil {
		t.Fatalf("its own proof: %v", err)
	}
	for _, other := range []ReservationClaim{
		{Cluster: "prod", NodeENIUID: "uid-1", Subnet: "subnet-1", CIDR: "10.0.40.128/26"},
		{Cluster: "prod", NodeENIUID: "uid-1", Subnet: "subnet-2", CIDR: "10.0.40.192/26"},
		{Cluster: "prod", NodeENIUID: "uid-2", Subnet: "subnet-1", CIDR: "10.0.40.192/26"},
		{Cluster: "test", NodeENIUID: "uid-1", Subnet: "subnet-1", CIDR: "10.0.40.192/26"},
	} {
		if _, err := ring.VerifyReservation(other, proof); !errors.Is(err, ErrMismatch) {
			t.Errorf("%+v: %v, want a mismatch", other, err)
		}
	}
	if _, err := ring.Verify(Claim{ENI: "subnet-1", Cluster: "prod", NodeENIUID: "uid-1"}, proof); !errors.Is(err, ErrMismatch) {
		t.Errorf("as an ENI's proof: %v, want a mismatch", err)
	}
}

func birth() BirthClaim {
	return BirthClaim{Nonce: "n0nce", Subnet: "subnet-1", Cluster: "prod", NodeENI: "multus", NodeENIUID: "uid-1", Node: "node-a",
		Instance: "i-1", DeviceIndex: "1", DeviceIndexBase: "1", CreatedAt: "2026-11-27T01:00:00Z"}
}

func TestBirthProofBindsNonceSubnetAndTags(t *testing.T) {
	r := ring(t, map[string]string{"k1": keyA})
	proof := r.SignBirth(birth())
	if !IsBirthProof(proof) || IsBirthProof(r.Sign(claim())) {
		t.Fatalf("IsBirthProof wrong for %q", proof)
	}
	if id, err := r.VerifyBirth(birth(), proof); err != nil || id != "k1" {
		t.Fatalf("own proof: key %q, %v", id, err)
	}
	changes := map[string]func(*BirthClaim){
		"another nonce":                    func(c *BirthClaim) { c.Nonce = "other" },
		"a copy onto another subnet's ENI": func(c *BirthClaim) { c.Subnet = "subnet-2" },
		"node":                             func(c *BirthClaim) { c.Node = "node-b" },
		"device index":                     func(c *BirthClaim) { c.DeviceIndex = "2" },
		"a boundary moved between fields":  func(c *BirthClaim) { c.Nonce, c.Subnet = "n0nces", "ubnet-1" },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			c := birth()
			change(&c)
			if _, err := r.VerifyBirth(c, proof); err != ErrMismatch {
				t.Fatalf("VerifyBirth = %v, want ErrMismatch", err)
			}
		})
	}
	// A proof of one scheme never verifies as the other, whatever it signs.
	if _, err := r.Verify(claim(), proof); err != ErrMalformed {
		t.Errorf("a birth proof as a v1 proof: %v, want ErrMalformed", err)
	}
	if _, err := r.VerifyBirth(birth(), r.Sign(claim())); err != ErrMalformed {
		t.Errorf("a v1 proof as a birth proof: %v, want ErrMalformed", err)
	}
}

func TestNoncesDiffer(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		n, err := NewNonce()
		if err != nil || len(n) != 22 || seen[n] {
			t.Fatalf("nonce %q (%v) repeated or malformed", n, err)
		}
		seen[n] = true
	}
}

package ec2

import (
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

func TestTagSetKey(t *testing.T) {
	// Length prefixes keep sets whose concatenations match apart.
	if TagSetKey(map[string]string{"a": "bc"}) == TagSetKey(map[string]string{"ab": "c"}) {
		t.Fatal("{a:bc} and {ab:c} named alike")
	}
	if TagSetKey(map[string]string{"x": "1", "y": "2"}) != TagSetKey(map[string]string{"y": "2", "x": "1"}) {
		t.Fatal("one set named two ways")
	}
}

// ENIs with equal tags end up holding one map; others keep their own,
// and a change through the state (clone) leaves the shared map alone.
func TestShareTagMaps(t *testing.T) {
	enis := []awstypes.ENI{
		{ID: "eni-1", Tags: map[string]string{"team": "x", "env": "prod"}},
		{ID: "eni-2", Tags: map[string]string{"env": "prod", "team": "x"}},
		{ID: "eni-3", Tags: map[string]string{"team": "y"}},
		{ID: "eni-4"},
	}
	shareTagMaps(enis)
	ptr := func(i int) uintptr { return uintptr(reflect.ValueOf(enis[i].Tags).UnsafePointer()) }
	if ptr(0) != ptr(1) || ptr(0) == ptr(2) || enis[3].Tags != nil {
		t.Fatalf("sharing wrong: %x %x %x %v", ptr(0), ptr(1), ptr(2), enis[3].Tags)
	}
	c := enis[1].Clone()
	c.Tags["team"] = "z"
	if enis[0].Tags["team"] != "x" {
		t.Fatal("a change to a clone reached the shared map")
	}
}

// tagsOf is a decoded tag set as a map, failing on a key seen twice.
func tagsOf(t testing.TB, key tagSet) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tag := range decodeTags(key) {
		k, v := aws.ToString(tag.Key), aws.ToString(tag.Value)
		if _, dup := out[k]; dup {
			t.Fatalf("key %q decoded twice", k)
		}
		out[k] = v
	}
	return out
}

// Issue 25: a value holding NULs (the pod annotation's attack) decoded
// into reserved tags of its own and the hash tag became a value.
func TestTagSetKeyAttack(t *testing.T) {
	attack := map[string]string{
		"A":                  "x\x00eni-operator.io/cluster\x00sandbox\x00eni-operator.io/node\x00n1\x00",
		"D":                  "x\x00Note",
		"eni-tagger.io/hash": "d052",
	}
	got := tagsOf(t, encodeTags(attack))
	if !maps.Equal(got, attack) {
		t.Fatalf("decoded %q, want %q", got, attack)
	}
	if len(sdkTags(attack)) != len(attack) {
		t.Fatalf("sdkTags: %d tags, want %d", len(sdkTags(attack)), len(attack))
	}
	if encodeTags(attack) == encodeTags(map[string]string{"A": "x", "eni-operator.io/cluster": "sandbox"}) {
		t.Fatal("two tag sets share an encoding")
	}
	if TagSetKey(attack) != string(encodeTags(attack)) {
		t.Fatal("two encodings of one tag set")
	}
}

// FuzzTagSetKeyRoundTrip: for tag sets holding any bytes, decoding the
// encoding gives the set back, and two sets encode alike only if they
// are equal. The seeds run in every go test; go test -fuzz explores.
func FuzzTagSetKeyRoundTrip(f *testing.F) {
	f.Add("", "", "", "", "", "")
	f.Add("A", "x\x00eni-operator.io/cluster\x00sandbox\x00", "D", "x\x00Note", "A", "x")
	f.Add("a", "bc", "ab", "c", "a\x00bc", "")
	f.Add("\x00", "\x00\x00", "1:a", "2:bc", "\x01", "\xff\xfe")
	f.Add("k", strings.Repeat("\x80", 200), "k\x00", "", ",", "=")
	f.Add("x", "1", "y", "2", "x\x001\x00y", "2")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3 string) {
		sets := []map[string]string{
			{},
			{k1: v1},
			{k1: v1, k2: v2},
			{k3: v3},
			{k1: v1, k2: v2, k3: v3},
			{k1 + "\x00" + v1: k2 + "\x00" + v2},
			{k1 + v1: k2 + v2, k3: v3},
		}
		keys := make([]tagSet, len(sets))
		for i, s := range sets {
			keys[i] = encodeTags(s)
			if got := tagsOf(t, keys[i]); !maps.Equal(got, s) {
				t.Fatalf("set %d: decode(encode(%q)) = %q", i, s, got)
			}
		}
		for i := range sets {
			for j := range sets {
				if (keys[i] == keys[j]) != maps.Equal(sets[i], sets[j]) {
					t.Fatalf("%q and %q: equal encodings %v, equal sets %v", sets[i], sets[j], keys[i] == keys[j], maps.Equal(sets[i], sets[j]))
				}
			}
		}
		// Whatever bytes decodeTags is handed, it returns, never panics.
		decodeTags(tagSet(k1 + v1 + k2))
	})
}

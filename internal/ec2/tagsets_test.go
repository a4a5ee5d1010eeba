package ec2

import (
	"reflect"
	"testing"
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
	enis := []ENI{
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
	c := enis[1].clone()
	c.Tags["team"] = "z"
	if enis[0].Tags["team"] != "x" {
		t.Fatal("a change to a clone reached the shared map")
	}
}

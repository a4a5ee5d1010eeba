package tagger

import (
	"maps"
	"reflect"
	"testing"
)

// Pruned or drained per-pod maps are new maps, so a burst's peak room is
// given back; what they hold is unchanged.
func TestPrunedMapsAreNewMaps(t *testing.T) {
	ptr := func(m map[string]int) uintptr { return reflect.ValueOf(m).Pointer() }
	m := map[string]int{"a": 1, "b": 2, "c": 3}
	kept := keepWhere(m, func(v int) bool { return v != 2 })
	if !maps.Equal(kept, map[string]int{"a": 1, "c": 3}) || ptr(kept) == ptr(m) {
		t.Errorf("keepWhere: %v (same map: %v)", kept, ptr(kept) == ptr(m))
	}
	same := without(kept, "a")
	if !maps.Equal(same, map[string]int{"c": 3}) || ptr(same) != ptr(kept) {
		t.Errorf("without a key of two: %v (new map: %v); want the same map", same, ptr(same) != ptr(kept))
	}
	if again := without(same, "missing"); ptr(again) != ptr(same) {
		t.Error("without a key not there made a new map")
	}
	empty := without(same, "c")
	if len(empty) != 0 || empty == nil || ptr(empty) == ptr(same) {
		t.Errorf("without the last key: %v (same map: %v); want a new empty map", empty, ptr(empty) == ptr(same))
	}
}

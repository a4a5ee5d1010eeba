package figure

import (
	"math"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"no samples", nil, 50, 0},
		{"one sample", ms(7), 99, 7 * time.Millisecond},
		{"median of unsorted", ms(5, 1, 4, 2, 3), 50, 3 * time.Millisecond},
		{"p99 of 100 is the largest", ms(make100()...), 99, 100 * time.Millisecond},
		{"p0 is the smallest", ms(9, 3, 6), 0, 3 * time.Millisecond},
		{"p100 stays in range", ms(1, 2), 100, 2 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentile(tc.ds, tc.p); got != tc.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tc.ds, tc.p, got, tc.want)
			}
		})
	}
}

func make100() []int {
	out := make([]int, 100)
	for i := range out {
		out[i] = 100 - i
	}
	return out
}

func TestLongestPlateau(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	never := time.Time{}
	for _, tc := range []struct {
		name        string
		ready, done []time.Time
		end         time.Time
		want        time.Duration
	}{
		{"nothing", nil, nil, at(10), 0},
		{"one pod: its wait", []time.Time{at(1)}, []time.Time{at(3)}, at(10), 2 * time.Second},
		{"steady progress: the longest gap between tags",
			[]time.Time{at(0), at(0), at(0)}, []time.Time{at(1), at(2.5), at(3)}, at(10), 1500 * time.Millisecond},
		{"idle time with nobody waiting is no plateau",
			[]time.Time{at(0), at(20)}, []time.Time{at(1), at(21)}, at(30), time.Second},
		{"a stall in the middle of a burst",
			[]time.Time{at(0), at(0), at(0)}, []time.Time{at(0.5), at(6.5), at(7)}, at(10), 6 * time.Second},
		{"a pod never tagged waits until the end",
			[]time.Time{at(0), at(1)}, []time.Time{at(2), never}, at(9), 7 * time.Second},
		{"a pod with no IP never waits", []time.Time{never, at(4)}, []time.Time{at(1), at(5)}, at(9), time.Second},
		{"tags right before the IP: no wait", []time.Time{at(5)}, []time.Time{at(2)}, at(9), 0},
		{"a wait starting as another ends is one stretch",
			[]time.Time{at(0), at(2)}, []time.Time{at(2), at(3)}, at(9), 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LongestPlateau(tc.ready, tc.done, tc.end); got != tc.want {
				t.Errorf("LongestPlateau = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPerSecond(t *testing.T) {
	for _, tc := range []struct {
		name  string
		x, c  []float64
		wantX []float64
		wantY []float64
	}{
		{"empty", nil, nil, nil, nil},
		{"one sample has no interval", []float64{1}, []float64{5}, nil, nil},
		{"steady", []float64{0, 1, 2}, []float64{0, 10, 30}, []float64{1, 2}, []float64{10, 20}},
		{"uneven intervals", []float64{0, 0.5, 2.5}, []float64{0, 5, 9}, []float64{0.5, 2.5}, []float64{10, 2}},
		{"a reset counts from zero", []float64{0, 1, 2}, []float64{50, 60, 4}, []float64{1, 2}, []float64{10, 4}},
		{"a repeated time is skipped", []float64{0, 1, 1}, []float64{0, 3, 3}, []float64{1}, []float64{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PerSecond(tc.x, tc.c)
			if !equal(got.X, tc.wantX) || !equal(got.Y, tc.wantY) {
				t.Errorf("PerSecond = %v %v, want %v %v", got.X, got.Y, tc.wantX, tc.wantY)
			}
		})
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name         string
		value, bound float64
		unit         string
		want         string
	}{
		{"within", 2.14159, 3, "s", "✓ 2.14 s ≤ 3 s"},
		{"at the bound passes", 3, 3, "s", "✓ 3 s ≤ 3 s"},
		{"over", 119, 84, "s", "✗ 119 s ≤ 84 s"},
		{"no unit", 0.012, 0.05, "", "✓ 0.012 ≤ 0.05"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := AtMost("x", tc.value, tc.bound, tc.unit, "why")
			if got := c.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			if c.Pass != (tc.value <= tc.bound) {
				t.Errorf("Pass = %v for %v ≤ %v", c.Pass, tc.value, tc.bound)
			}
		})
	}
}

func TestSlope(t *testing.T) {
	for _, tc := range []struct {
		name string
		x, y []float64
		from float64
		want float64
	}{
		{"flat", []float64{0, 10, 20}, []float64{5, 5, 5}, 0, 0},
		{"a line", []float64{0, 10, 20, 30}, []float64{1, 3, 5, 7}, 0, 0.2},
		{"a short sawtooth ending high tilts up", []float64{0, 1, 2, 3}, []float64{0, 2, 0, 2}, 0, 0.4},
		{"only from the warm-up's end", []float64{0, 10, 20, 30}, []float64{100, 0, 1, 2}, 10, 0.1},
		{"falling", []float64{0, 1}, []float64{4, 2}, 0, -2},
		{"one sample", []float64{0, 1}, []float64{4, 2}, 1, 0},
		{"no spread in x", []float64{3, 3}, []float64{1, 2}, 0, 0},
		{"no samples", nil, nil, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Slope(tc.x, tc.y, tc.from); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("Slope(%v, %v, %v) = %v, want %v", tc.x, tc.y, tc.from, got, tc.want)
			}
		})
	}
}

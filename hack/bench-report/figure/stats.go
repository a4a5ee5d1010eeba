package figure

import (
	"fmt"
	"slices"
	"time"
)

// Check is one target of a figure: Value must be at most Bound.
type Check struct {
	What  string  `json:"what"`
	Value float64 `json:"value"`
	Bound float64 `json:"bound"`
	Unit  string  `json:"unit"`
	// Why says where the bound comes from (the issue, a derivation).
	Why  string `json:"why"`
	Pass bool   `json:"pass"`
}

// AtMost is the check value ≤ bound.
func AtMost(what string, value, bound float64, unit, why string) Check {
	return Check{What: what, Value: value, Bound: bound, Unit: unit, Why: why, Pass: value <= bound}
}

// String is the check as the report shows it: "✓ 2.1 s ≤ 3 s".
func (c Check) String() string {
	mark := "✗"
	if c.Pass {
		mark = "✓"
	}
	return fmt.Sprintf("%s %s ≤ %s", mark, c.with(c.Value), c.with(c.Bound))
}

func (c Check) with(v float64) string {
	if c.Unit == "" {
		return Num(v)
	}
	return Num(v) + " " + c.Unit
}

// Num formats a measured number: whole numbers as such, others with
// three significant digits.
func Num(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprint(int64(f))
	}
	return fmt.Sprintf("%.3g", f)
}

// Percentile is the p-th percentile (p in [0,100]) of ds by the nearest
// rank below; 0 for no samples.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, max(0, int(float64(len(s))*p/100)))]
}

// LongestPlateau is the longest time during which at least one pod
// waited (its IP set, its tags not yet written) and no pod's tags were
// written: the stall a reader sees as a flat stretch of the tagged curve
// while work is pending. ready[i] is when pod i got its IP, done[i] when
// its tags landed (zero: never, so it waits until end). A pod done before
// its IP (tags already right) never waits.
func LongestPlateau(ready, done []time.Time, end time.Time) time.Duration {
	type event struct {
		at   time.Time
		done bool
	}
	var events []event
	for i, r := range ready {
		if r.IsZero() || (!done[i].IsZero() && !done[i].After(r)) {
			continue
		}
		events = append(events, event{at: r})
		if !done[i].IsZero() {
			events = append(events, event{at: done[i], done: true})
		}
	}
	// At equal times a pod's tags landing counts after pods getting IPs,
	// so a wait that ends as another starts is one stretch of progress.
	slices.SortFunc(events, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		if a.done == b.done {
			return 0
		}
		if a.done {
			return 1
		}
		return -1
	})
	var longest time.Duration
	waiting, since := 0, time.Time{}
	for _, e := range events {
		if !e.done {
			if waiting == 0 {
				since = e.at
			}
			waiting++
			continue
		}
		longest = max(longest, e.at.Sub(since))
		since = e.at
		waiting--
	}
	if waiting > 0 && end.After(since) {
		longest = max(longest, end.Sub(since))
	}
	return longest
}

// PerSecond turns a cumulative counter sampled at times x (seconds) into
// a rate per second between samples, at each interval's end; a counter
// that went down (reset) counts from zero.
func PerSecond(x, cumulative []float64) Series {
	var s Series
	for i := 1; i < len(x) && i < len(cumulative); i++ {
		dt := x[i] - x[i-1]
		if dt <= 0 {
			continue
		}
		d := cumulative[i] - cumulative[i-1]
		if d < 0 {
			d = cumulative[i]
		}
		s.X = append(s.X, x[i])
		s.Y = append(s.Y, d/dt)
	}
	return s
}

// Slope is the least-squares slope of y over x (units of y per unit of
// x) of the samples with x >= from: a soak's drift after its warm-up,
// robust to the sawtooth of garbage collection and refreshes that a
// first-to-last difference is not. 0 for fewer than two such samples
// or no spread in x.
func Slope(x, y []float64, from float64) float64 {
	var n, sx, sy, sxx, sxy float64
	for i := 0; i < len(x) && i < len(y); i++ {
		if x[i] < from {
			continue
		}
		n++
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	d := n*sxx - sx*sx
	if n < 2 || d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

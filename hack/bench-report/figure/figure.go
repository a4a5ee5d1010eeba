// Package figure is the file format between test/bench, which writes one
// JSON file per figure, and bench-report, which reads them: one type, so
// the writer and the reader cannot drift apart. It also holds the pure
// computations both sides share (percentiles, plateaus, checks against
// a bound), so they are table-tested once.
package figure

// Figure is one figure of the report.
type Figure struct {
	Name       string             `json:"name"`
	Parameters map[string]any     `json:"parameters"`
	Results    map[string]any     `json:"results"`
	EC2Calls   map[string]int     `json:"ec2Calls"`
	Notes      []string           `json:"notes,omitempty"`
	Machine    map[string]any     `json:"machine"`
	Extra      map[string]float64 `json:"extra,omitempty"`
	// Checks are the figure's targets (the bounds), each with
	// its measured value.
	Checks []Check `json:"checks,omitempty"`
	// Charts are the figure's time series, drawn as SVG by bench-report.
	Charts []Chart `json:"charts,omitempty"`
}

// Chart is one time-series chart: its lines share the x axis (seconds
// since the figure's bed was set up) and the y axis.
type Chart struct {
	Title  string   `json:"title"`
	YLabel string   `json:"yLabel"`
	Series []Series `json:"series"`
	// Marks are moments worth a vertical line: an operator start, a
	// restart, the start of a burst.
	Marks []Mark `json:"marks,omitempty"`
}

// Series is one line of a chart; X and Y have the same length.
type Series struct {
	Name string    `json:"name"`
	X    []float64 `json:"x"`
	Y    []float64 `json:"y"`
}

// Mark is a labelled moment, in seconds on a chart's x axis.
type Mark struct {
	X     float64 `json:"x"`
	Label string  `json:"label"`
}

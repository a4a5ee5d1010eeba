// Package figure is the file format between test/bench, which writes one
// JSON file per figure, and bench-report, which reads them: one type, so
// the writer and the reader cannot drift apart.
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
}

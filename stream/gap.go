package stream

import "encoding/json"

// A batch an artifact declared (the transport's Trainscope-Batches
// header) that never reached the ingestor is recorded as a
// rejected_batches row: its reason starts MissingReason, its headers
// column holds the Gap. The store keeps them and the live detectors read
// them back, so both live here, in the model, not in the transport.

// MissingReason starts the reason of a rejected_batches row recorded for a
// declared batch that never reached the ingestor.
const MissingReason = "never arrived: "

// Gap is what a missing batch's rejected_batches row holds in its headers
// column (JSON): the artifact it belongs to, and how many batches that
// artifact declared.
type Gap struct {
	Artifact string `json:"artifact"` // the ranks row's source, else "producer <id>"
	Producer string `json:"producer"`
	Declared int    `json:"declared"`
}

// JSON is the Gap as its row stores it.
func (g Gap) JSON() string {
	b, _ := json.Marshal(g)
	return string(b)
}

// ParseGap reads a Gap back from a row's headers column.
func ParseGap(s string) (Gap, error) {
	var g Gap
	err := json.Unmarshal([]byte(s), &g)
	return g, err
}

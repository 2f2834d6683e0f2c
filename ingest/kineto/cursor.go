package kineto

import "github.com/trainscope/trainscope/ingest/jsonscan"

// cursor is the JSON scanner with the Kineto-specific parsers as methods
// (parseEvent, parseArgs, ...).
type cursor struct {
	*jsonscan.Cursor
}

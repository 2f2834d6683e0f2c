package kineto

import "github.com/trainscope/trainscope/ingest/jsonscan"

// FormatError is bad input: it names the file, the byte offset in the
// (decompressed) JSON and what was expected there.
type FormatError = jsonscan.FileError

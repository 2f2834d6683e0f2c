package ingest

// CompactFiles lets tests merge staged files sooner.
var CompactFiles = &compactFiles

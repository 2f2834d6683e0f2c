package ingest

// CompactFiles lets tests merge staged files sooner.
var CompactFiles = &compactFiles

// TwoPassBytes lets tests read every trace in two passes.
var TwoPassBytes = &twoPassBytes

// TwoPassChunkRows lets tests cut such traces into small chunks.
var TwoPassChunkRows = &twoPassChunkRows

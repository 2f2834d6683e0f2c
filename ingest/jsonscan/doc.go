// Package jsonscan is the zero-allocation JSON scanner the artifact readers
// share: a Cursor over a window of bytes with readers for strings (raw, no
// copy), exact microsecond-to-nanosecond numbers, integers (decimal, quoted
// or 0x-hex strings), floats, and skipping of any value.
//
// Contract: running out of window panics with ErrShort and bad syntax with a
// *SyntaxError; a reader parses one unit (an event, an array element) at a
// time inside a recover, and on ErrShort refills its window and parses that
// unit again from its start, so nothing half-parsed is ever committed.
package jsonscan

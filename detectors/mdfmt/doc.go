// Package mdfmt formats numbers as trainscope's reports write them:
// durations and byte counts with units, signed changes, rank ranges
// ("0-7, 12"), rounding for reproducible JSON, and markdown tables whose
// cells format themselves by column name (_ns, _bytes).
package mdfmt

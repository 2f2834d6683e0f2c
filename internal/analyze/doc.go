// Package analyze is the offline analysis pipeline behind trainscope's
// commands that read files and print a report: it reads traces, memory
// snapshots, launch scripts and counter scrapes into a DuckDB store
// (ingest), runs the detectors over the analysed window
// (detectors.Analyze) and writes the report as markdown, JSON or HTML.
// Run is 'trainscope analyze' (with its progress, timing line, fleet
// archive and Parquet export); Report runs the detectors again on a saved
// database, Profile reports on a memory snapshot, Export writes the
// Perfetto trace, Diff compares two runs, Audit judges launch scripts,
// Validate checks the detector files and RuleTests runs their rule tests.
//
// Each takes the command's options as its flags gave them and returns a
// cli.UsageError or cli.InputError where the command must exit 2. It
// lives under internal/: it is the binary's own wiring.
package analyze

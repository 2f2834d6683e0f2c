package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/trainscope/trainscope/detectors/report/html"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/ingest/script"
	"github.com/trainscope/trainscope/sql/duck"
)

const auditHelp = `Usage: trainscope audit SCRIPT... [flags]

Reads training launch scripts (bash: ray job submit / torchrun / python
launchers with their flag arrays and sourced model configs) and prints, per
script, a perf-doctor report: the flags that cost step time or MFU
(Performance findings), the settings that waste or overrun GPU memory
(Memory findings, with a per-GPU memory budget), launch checks (parallel
sizes that do not divide), each with the setting and its file:line, the
estimated cost, the fix and when the setting is right after all.

Scripts are only read: never edited, never run. A flag on a branch that
does not run is ignored; a "# NOTE" beside a flag is taken as the author's
reason and downgrades the finding to info. A script that cannot be fully
parsed is reported as far as it was read, with its problems; the exit code
is 2 only when no script could be parsed at all.

The rules are SQL in detectors/audit/ over the script_flags and
script_context tables; their thresholds are overridden like the trace
detectors' (detectors.thresholds.<rule>.<threshold> in the config).

Flags:
`

func runAudit(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flagSet("audit", auditHelp, errOut)
	gpuName := fs.String("gpu", "", "GPU for scripts that do not name one, e.g. H20-96G, H100-80G, A100-80G (default "+detectors.DefaultAuditGPU+", reported as assumed)")
	format := fs.String("format", "md", "report format: md, json or html (one self-contained page)")
	outPath := fs.StringP("out", "o", "", "write the report to this file instead of stdout")
	config := fs.String("config", "", "config file (YAML, TOML or JSON); also TRAINSCOPE_CONFIG")
	env := fs.StringArray("env", nil, "KEY=VALUE a variable the launch environment sets (MODEL_CONFIG_DIR, NNODES ...); repeatable")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return &usageError{"audit: name at least one launch script (see 'trainscope audit --help')"}
	}
	if err := checkReportFormat("audit", *format); err != nil {
		return err
	}
	if *gpuName != "" {
		if _, ok := gpu.Lookup(*gpuName); !ok {
			return &usageError{fmt.Sprintf("audit: --gpu %q: unknown GPU (known: %s)", *gpuName, strings.Join(gpu.Keys(), ", "))}
		}
	}
	opt := script.Options{Env: map[string]string{}}
	for _, kv := range *env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return &usageError{fmt.Sprintf("audit: --env %q: want KEY=VALUE", kv)}
		}
		opt.Env[k] = v
	}
	cfg, err := loadConfig(*config)
	if err != nil {
		return err
	}
	set, err := detectors.NewAuditSet(cfg.Detectors)
	if err != nil {
		return &inputError{err}
	}
	st, err := duck.Open(ctx, "", duck.Options{Threads: cfg.DuckThreads(), MemoryLimit: cfg.DuckDB.MemoryLimit})
	if err != nil {
		return err
	}
	defer st.Close()

	parsed := 0
	var failures []string
	for i, path := range fs.Args() {
		// Run ids keep the command-line order in the report.
		runID := fmt.Sprintf("audit-%03d-%s", i+1, filepath.Base(path))
		popt := opt
		if popt.SearchRoot == "" {
			popt.SearchRoot = ingest.ModelSearchRoot(path)
		}
		sc, perr := script.ParseFile(path, popt)
		if perr == nil && !sc.IsLaunchScript() && len(sc.Problems) > 0 {
			perr = sc.Problems[len(sc.Problems)-1] // what the file is instead
		}
		if perr != nil && !sc.IsLaunchScript() {
			// Unreadable or not a shell script: nothing to judge; it
			// still gets a report naming its problem.
			failures = append(failures, perr.Error())
			if len(sc.Context.Problems) == 0 {
				// The parser leaves an unreadable file's context empty;
				// the report must still say why nothing was found.
				sc.Context.Problems = []string{perr.Error()}
			}
		} else {
			parsed++
		}
		if err := ingest.Send(ctx, ingest.StoreSink{St: st}, path, ingest.ScriptBatches(sc, runID), warnTo(errOut)); err != nil {
			return err
		}
	}
	if parsed == 0 {
		// nothing was judged: a report would only print an empty verdict
		// (and rules that fire on missing settings) under a failure
		return &inputError{fmt.Errorf("audit: no script could be parsed: %s", strings.Join(failures, "; "))}
	}
	if _, err := set.RunAudit(ctx, st, detectors.AuditOptions{GPU: *gpuName}); err != nil {
		return err
	}
	rep, err := detectors.BuildAuditReport(ctx, st)
	if err != nil {
		return err
	}
	return writeAudit(rep, *format, *outPath, out)
}

func writeAudit(rep *detectors.AuditReport, format, path string, out io.Writer) error {
	return writeTo(path, out, func(w io.Writer) error {
		switch format {
		case "json":
			return rep.WriteJSON(w)
		case "html":
			return html.WriteOf(w, rep.WriteMarkdown)
		}
		return rep.WriteMarkdown(w)
	})
}

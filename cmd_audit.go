package main

import (
	"context"
	"io"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/internal/analyze"
	"github.com/trainscope/trainscope/internal/cli"
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
	var o analyze.AuditOptions
	fs := cli.FlagSet("audit", auditHelp, errOut)
	fs.StringVar(&o.GPU, "gpu", "", "GPU for scripts that do not name one, e.g. H20-96G, H100-80G, A100-80G (default "+detectors.DefaultAuditGPU+", reported as assumed)")
	fs.StringVar(&o.Format, "format", "md", formatHelp)
	fs.StringVarP(&o.Out, "out", "o", "", outHelp)
	fs.StringVar(&o.Config, "config", "", configHelp)
	fs.StringArrayVar(&o.Env, "env", nil, "KEY=VALUE a variable the launch environment sets (MODEL_CONFIG_DIR, NNODES ...); repeatable")
	if err := cli.Parse(fs, args, out); err != nil {
		return err
	}
	return analyze.Audit(ctx, fs.Args(), o, out, errOut)
}

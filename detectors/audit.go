package detectors

import (
	"bytes"
	"context"
	"embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/trainscope/trainscope/gpu"
	"github.com/trainscope/trainscope/sql/duck"
)

// Config-audit rules: one .sql per perf-doctor rule (r_*.sql), per generic
// launch check (g_*.sql) and the memory budget (mem_budget.sql). They read
// script_flags / script_context through the views of
// sql/schema/065_audit.sql and are loaded by the same strict parser as the
// trace detectors, so a rule is data, not code.
//
//go:embed audit/*.sql audit/baselines.csv
var auditFS embed.FS

// Categories of audit findings: the report's Performance and Memory
// sections.
const (
	CategoryConfig       = "config"
	CategoryConfigMemory = "config_memory"
)

// DefaultAuditGPU is the GPU a script is judged against when neither the
// script nor --gpu names one (the perf-doctor default).
const DefaultAuditGPU = "H20-96G"

// AuditDetectors returns the embedded audit rules.
func AuditDetectors() ([]*Detector, error) {
	ds, err := loadFS(auditFS, "audit", "detectors/audit/")
	for _, d := range ds {
		d.Builtin = true
	}
	return ds, err
}

// NewAuditSet loads the audit rules and applies cfg's Disable and
// Thresholds entries that name audit rules. The config is shared with the
// trace detectors, so entries naming a trace detector are left to NewSet;
// a name that is neither is an error. cfg.Dirs holds trace detectors and
// is not read here.
func NewAuditSet(cfg Config) (*Set, error) {
	var errs []error
	all, err := AuditDetectors()
	if err != nil {
		errs = append(errs, err)
	}
	byName := map[string]*Detector{}
	for _, d := range all {
		byName[d.Name] = d
	}
	traceNames := map[string]bool{}
	if tr, err := Builtin(); err == nil {
		for _, d := range tr {
			traceNames[d.Name] = true
		}
	}
	set, cerrs := applyConfig(all, byName, cfg, traceNames)
	return set, errors.Join(append(errs, cerrs...)...)
}

// AuditOptions tune an audit run.
type AuditOptions struct {
	// GPU is the GPU (a gpu catalog key or name) for scripts that do not
	// name one; empty means DefaultAuditGPU, reported as assumed.
	GPU string
}

// RunAudit judges every script in st's script_context: it loads the
// baselines, records the GPU each script is judged against, and runs the
// set's finding rules into findings (replacing earlier audit findings of
// the same runs). Trace detectors in the set are not run: they read trace
// tables an audit database does not have.
func (s *Set) RunAudit(ctx context.Context, st *duck.Store, opt AuditOptions) ([]Result, error) {
	if err := st.Exec(ctx, "DELETE FROM findings WHERE run_id IN (SELECT run_id FROM script_context) AND category IN ('config', 'config_memory')"); err != nil {
		return nil, err
	}
	if err := loadBaselines(ctx, st); err != nil {
		return nil, err
	}
	if err := recordAuditGPUs(ctx, st, opt); err != nil {
		return nil, err
	}
	return s.runKinds(ctx, st, 1, nil, KindFinding)
}

// recordAuditGPUs fills audit_gpu: the script's own GPU when the catalog
// knows it, else --gpu, else the default (assumed).
func recordAuditGPUs(ctx context.Context, st *duck.Store, opt AuditOptions) error {
	if err := st.Exec(ctx, "DELETE FROM audit_gpu WHERE run_id IN (SELECT run_id FROM script_context)"); err != nil {
		return err
	}
	rows, err := st.Query(ctx, "SELECT run_id, coalesce(gpu, '') FROM script_context ORDER BY run_id")
	if err != nil {
		return err
	}
	type row struct{ run, gpu string }
	var rs []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.run, &r.gpu); err != nil {
			rows.Close()
			return err
		}
		rs = append(rs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	fallback, source := opt.GPU, "flag"
	if fallback == "" {
		fallback, source = DefaultAuditGPU, "assumed"
	}
	def, ok := gpu.Lookup(fallback)
	if !ok {
		return fmt.Errorf("audit: unknown GPU %q (known: %s)", fallback, strings.Join(gpu.Keys(), ", "))
	}
	for _, r := range rs {
		spec, src := def, source
		if s, ok := gpu.Lookup(r.gpu); ok && r.gpu != "" {
			spec, src = s, "script"
		}
		if err := st.Exec(ctx, "INSERT INTO audit_gpu VALUES (?, ?, ?, ?)", r.run, spec.Key, spec.MemGiB, src); err != nil {
			return err
		}
	}
	return nil
}

// loadBaselines fills audit_baselines from the embedded CSV once per
// database.
func loadBaselines(ctx context.Context, st *duck.Store) error {
	rows, err := st.Query(ctx, "SELECT count(*) FROM audit_baselines")
	if err != nil {
		return err
	}
	var n int
	if rows.Next() {
		rows.Scan(&n)
	}
	rows.Close()
	if n > 0 {
		return nil
	}
	bs, err := Baselines()
	if err != nil {
		return err
	}
	for _, b := range bs {
		args := make([]any, len(b))
		for i, v := range b {
			switch n, err := strconv.ParseInt(v, 10, 64); {
			case v == "":
				args[i] = nil
			case err == nil && (i == 2 || i >= 5 && i <= 13):
				args[i] = n
			default:
				args[i] = v
			}
		}
		if err := st.Exec(ctx, "INSERT INTO audit_baselines VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", args...); err != nil {
			return fmt.Errorf("audit baselines: %w", err)
		}
	}
	return nil
}

// baselineColumns is the header baselines.csv must have, in the order of
// the audit_baselines table.
var baselineColumns = []string{"name", "model", "gpus", "gpu", "mode", "tp", "pp", "cp", "ep", "etp", "dp",
	"global_batch", "max_response_len", "max_tokens_per_gpu", "key_flags", "source"}

// Baselines returns the rows of the embedded baselines.csv (without its
// header), checked: the header matches and number columns hold integers.
func Baselines() ([][]string, error) {
	text, err := auditFS.ReadFile("audit/baselines.csv")
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(bytes.NewReader(text))
	r.Comment = '#'
	var out [][]string
	for line := 1; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("detectors/audit/baselines.csv: %w", err)
		}
		if len(out) == 0 && rec[0] == "name" {
			if strings.Join(rec, ",") != strings.Join(baselineColumns, ",") {
				return nil, fmt.Errorf("detectors/audit/baselines.csv: header must be %s", strings.Join(baselineColumns, ","))
			}
			out = append(out, nil)
			continue
		}
		for _, i := range []int{2, 5, 6, 7, 8, 9, 10, 11, 12, 13} {
			if rec[i] == "" && i != 2 {
				continue
			}
			if _, err := strconv.ParseInt(rec[i], 10, 64); err != nil {
				return nil, fmt.Errorf("detectors/audit/baselines.csv: row %q: %s %q is not an integer", rec[0], baselineColumns[i], rec[i])
			}
		}
		out = append(out, rec)
	}
	if len(out) == 0 || out[0] != nil {
		return nil, fmt.Errorf("detectors/audit/baselines.csv: no header")
	}
	return out[1:], nil
}

// RunWithAudit runs the set's trace detectors and then, when the store
// holds launch scripts (script_context rows), the config audit rules tuned
// by the same config: one call that gives a run with traces and a script
// its trace and audit findings together.
func (s *Set) RunWithAudit(ctx context.Context, st *duck.Store, gpu string) ([]Result, error) {
	return s.runWithAudit(ctx, st, gpu, false)
}

// runWithAudit is RunWithAudit; keep leaves the shared views computed for
// the caller, who drops them (Analyze).
func (s *Set) runWithAudit(ctx context.Context, st *duck.Store, gpu string, keep bool) ([]Result, error) {
	res, err := s.run(ctx, st, keep)
	if err != nil {
		return res, err
	}
	var scripts int
	if err := st.Conn().QueryRowContext(ctx, "SELECT count(*) FROM script_context").Scan(&scripts); err != nil {
		return res, err
	}
	if scripts == 0 {
		return res, nil
	}
	audit, err := NewAuditSet(s.Config)
	if err != nil {
		return res, err
	}
	more, err := audit.RunAudit(ctx, st, AuditOptions{GPU: gpu})
	return append(res, more...), err
}

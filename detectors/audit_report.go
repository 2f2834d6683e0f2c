package detectors

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/trainscope/trainscope/sql/duck"
)

// AuditReport is the perf-doctor report of one or more launch scripts.
type AuditReport struct {
	Scripts []AuditScript `json:"scripts"`
}

// AuditScript is one script's report.
type AuditScript struct {
	Script      string         `json:"script"`
	RunID       string         `json:"run_id"`
	Context     string         `json:"context"` // the report's Context line
	GPU         string         `json:"gpu"`
	GPUSource   string         `json:"gpu_source"` // script, flag (--gpu) or assumed
	Problems    []string       `json:"problems,omitempty"`
	Performance []AuditFinding `json:"performance"`
	Memory      []AuditFinding `json:"memory"`
	Counts      map[string]int `json:"counts"`
	TopAction   string         `json:"top_action"`
}

// AuditFinding is one rule that fired.
type AuditFinding struct {
	Rule     string `json:"rule"` // R-P05, G-PAR, MEM
	Detector string `json:"detector"`
	Severity string `json:"severity"`
	Title    string `json:"title"`
	Message  string `json:"message"`
	Flag     string `json:"flag,omitempty"`
	Value    string `json:"value,omitempty"`
	State    string `json:"state,omitempty"` // set, missing, default, derived
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Array    string `json:"array,omitempty"`
	Cost     string `json:"cost"`
	Fix      string `json:"fix"`
	SkipIf   string `json:"skip_if"`
	Note     string `json:"note,omitempty"` // the author's # NOTE that downgraded it
}

var auditSevRank = map[string]int{"critical": 0, "warn": 1, "info": 2}

// BuildAuditReport reads script_audit and the audit findings of st.
func BuildAuditReport(ctx context.Context, st *duck.Store) (*AuditReport, error) {
	rows, err := st.Query(ctx, `SELECT run_id, script, model, dense_or_moe, modality, gpus, nodes, gpus_per_node, mode,
		tp1, pp1, cp1, ep1, etp1, max_response_len, gpu_name, mem_gib, gpu_source, gpu, problems
		FROM script_audit ORDER BY run_id`)
	if err != nil {
		return nil, err
	}
	rep := &AuditReport{}
	byRun := map[string]int{}
	for rows.Next() {
		var (
			run, script                                  string
			model, dm, modality, mode, gpuName, src, own sql.NullString
			gpus, nodes, gpn, resp                       sql.NullInt64
			tp, pp, cp, ep, etp                          int64
			mem                                          sql.NullFloat64
			problems                                     any
		)
		if err := rows.Scan(&run, &script, &model, &dm, &modality, &gpus, &nodes, &gpn, &mode,
			&tp, &pp, &cp, &ep, &etp, &resp, &gpuName, &mem, &src, &own, &problems); err != nil {
			rows.Close()
			return nil, err
		}
		kind := "dense"
		if dm.String == "moe" {
			kind = "MoE"
		} else if !dm.Valid {
			kind = "?"
		}
		mod := "?"
		switch modality.String {
		case "text", "video":
			mod = modality.String
		case "image", "multimodal", "omni":
			mod = "mm"
		}
		gpuText := fmt.Sprintf("%s %.0fGB", gpuName.String, mem.Float64)
		switch src.String {
		case "assumed":
			gpuText += " (assumed)"
		case "flag":
			gpuText += " (--gpu)"
		}
		if own.Valid && src.String != "script" {
			gpuText += " — script targets " + own.String
		}
		line := fmt.Sprintf("model=%s (%s, %s) · GPUs=%s (%s×%s) · mode=%s · TP%d/PP%d/CP%d/EP%d/ETP%d · max-resp-len=%s · GPU=%s",
			orQ(model), kind, mod, intQ(gpus), intQ(nodes), intQ(gpn), orQ(mode), tp, pp, cp, ep, etp, intQ(resp), gpuText)
		as := AuditScript{Script: script, RunID: run, Context: line, GPU: gpuName.String, GPUSource: src.String,
			Performance: []AuditFinding{}, Memory: []AuditFinding{}, Counts: map[string]int{"critical": 0, "warn": 0, "info": 0}}
		if l, ok := problems.([]any); ok {
			for _, p := range l {
				if s, ok := p.(string); ok {
					as.Problems = append(as.Problems, s)
				}
			}
		}
		byRun[run] = len(rep.Scripts)
		rep.Scripts = append(rep.Scripts, as)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	frows, err := st.Query(ctx, `SELECT f.run_id, f.detector, f.category, f.severity, coalesce(f.subject, ''), f.message,
		coalesce(f.impact, ''), coalesce(f.fix, ''), coalesce(f.evidence, '{}')
		FROM findings f WHERE f.run_id IN (SELECT run_id FROM script_context) AND f.category IN (?, ?)`,
		CategoryConfig, CategoryConfigMemory)
	if err != nil {
		return nil, err
	}
	defer frows.Close()
	for frows.Next() {
		var run, det, cat, sev, subject, msg, impact, fix, evidence string
		if err := frows.Scan(&run, &det, &cat, &sev, &subject, &msg, &impact, &fix, &evidence); err != nil {
			return nil, err
		}
		i, ok := byRun[run]
		if !ok {
			continue
		}
		var ev struct {
			File   *string `json:"file"`
			Line   *int    `json:"line"`
			Flag   *string `json:"flag"`
			Value  *string `json:"value"`
			Array  *string `json:"array"`
			State  *string `json:"state"`
			Title  *string `json:"title"`
			SkipIf *string `json:"skip_if"`
			Note   *string `json:"note"`
		}
		if err := json.Unmarshal([]byte(evidence), &ev); err != nil {
			return nil, fmt.Errorf("audit finding %s: evidence: %w", det, err)
		}
		f := AuditFinding{Rule: subject, Detector: det, Severity: sev, Message: msg, Cost: impact, Fix: fix,
			Title: deref(ev.Title), Flag: deref(ev.Flag), Value: deref(ev.Value), State: deref(ev.State),
			File: deref(ev.File), Array: deref(ev.Array), SkipIf: deref(ev.SkipIf), Note: deref(ev.Note)}
		if ev.Line != nil {
			f.Line = *ev.Line
		}
		s := &rep.Scripts[i]
		s.Counts[sev]++
		if cat == CategoryConfigMemory {
			s.Memory = append(s.Memory, f)
		} else {
			s.Performance = append(s.Performance, f)
		}
	}
	if err := frows.Err(); err != nil {
		return nil, err
	}
	for i := range rep.Scripts {
		s := &rep.Scripts[i]
		sortFindings(s.Performance)
		sortFindings(s.Memory)
		s.TopAction = topAction(s)
	}
	return rep, nil
}

// sortFindings orders by severity, then rule id, then line: the report is
// deterministic for the same database.
func sortFindings(fs []AuditFinding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if auditSevRank[a.Severity] != auditSevRank[b.Severity] {
			return auditSevRank[a.Severity] < auditSevRank[b.Severity]
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Line < b.Line
	})
}

// topAction is the fix of the most severe finding; the memory budget's
// verdict only when it is the problem (it is always reported).
func topAction(s *AuditScript) string {
	var all []AuditFinding
	for _, f := range append(append([]AuditFinding{}, s.Performance...), s.Memory...) {
		if f.Rule == "MEM" && f.Severity == "info" {
			continue
		}
		all = append(all, f)
	}
	if len(all) == 0 {
		return "nothing to change: no rule fired"
	}
	sortFindings(all)
	f := all[0]
	fix := f.Fix
	if fix == "" {
		fix = f.Title
	}
	return fmt.Sprintf("%s (%s): %s", f.Rule, f.Title, fix)
}

// WriteJSON writes the report as indented JSON.
func (r *AuditReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteMarkdown writes each script's report in the perf-doctor template:
// Context line, Performance findings, Memory findings, Summary.
func (r *AuditReport) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	for i, s := range r.Scripts {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "# perf-doctor: %s\n\n", s.Script)
		fmt.Fprintf(&b, "**Context:** %s\n\n", s.Context)
		if len(s.Problems) > 0 {
			b.WriteString("**Parse problems** (the report covers what could be read):\n")
			for _, p := range s.Problems {
				fmt.Fprintf(&b, "- %s\n", p)
			}
			b.WriteString("\n")
		}
		b.WriteString("---\n\n## 🚀 Performance findings\n\n")
		writeFindings(&b, s.Performance)
		b.WriteString("## 💾 Memory findings\n\n")
		writeFindings(&b, s.Memory)
		b.WriteString("---\n\n## Summary\n\n")
		fmt.Fprintf(&b, "- Critical: %d · Warn: %d · Info: %d\n", s.Counts["critical"], s.Counts["warn"], s.Counts["info"])
		fmt.Fprintf(&b, "- **Top action:** %s\n", s.TopAction)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeFindings(b *strings.Builder, fs []AuditFinding) {
	if len(fs) == 0 {
		b.WriteString("None.\n\n")
		return
	}
	for _, f := range fs {
		fmt.Fprintf(b, "### [%s] %s — %s\n", strings.ToUpper(f.Severity), f.Rule, f.Title)
		fmt.Fprintf(b, "- **Setting:** %s\n", setting(f))
		cost := f.Cost
		if f.Message != "" {
			cost = strings.TrimSuffix(f.Message, ".") + ". " + cost
		}
		fmt.Fprintf(b, "- **Cost:** %s\n", cost)
		if f.Fix != "" {
			fmt.Fprintf(b, "- **Fix:** %s\n", codeFix(f.Fix))
		}
		fmt.Fprintf(b, "- **Skip if:** %s\n", f.SkipIf)
		if f.Note != "" {
			fmt.Fprintf(b, "- **Author's note:** %s (downgraded to info)\n", f.Note)
		}
		b.WriteString("\n")
	}
}

// setting renders the flag as written and where: `--flag value` (file:line,
// ARRAY), or what is missing and where it belongs.
func setting(f AuditFinding) string {
	where := ""
	if f.File != "" {
		where = fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	if f.Array != "" {
		if where != "" {
			where += ", "
		}
		where += f.Array
	}
	if where != "" {
		where = " (" + where + ")"
	}
	flag := f.Flag
	if f.Value != "" {
		flag += " " + f.Value
	}
	switch f.State {
	case "missing":
		if where != "" {
			where = " — belongs in" + where
		}
		return fmt.Sprintf("`%s` not set%s", f.Flag, where)
	case "default":
		return fmt.Sprintf("`%s` not given (default 1)%s", f.Flag, where)
	case "derived":
		if f.Flag == "" {
			return "derived from the parallel sizes, batch and model config"
		}
		return fmt.Sprintf("derived from `%s`%s and the other parallel sizes", flag, where)
	}
	return fmt.Sprintf("`%s`%s", flag, where)
}

// codeFix quotes a fix made of flags so it can be copied; prose stays
// prose.
func codeFix(fix string) string {
	if strings.HasPrefix(fix, "--") {
		return "`" + fix + "`"
	}
	return fix
}

func orQ(s sql.NullString) string {
	if !s.Valid {
		return "?"
	}
	return s.String
}

func intQ(v sql.NullInt64) string {
	if !v.Valid {
		return "?"
	}
	return fmt.Sprint(v.Int64)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

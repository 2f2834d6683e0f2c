package archive

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/trainscope/trainscope/sql/duck"
)

// Attacher turns the tables of a store into views over an archive, each
// once its first file is there.
type Attacher struct {
	Dir string
	// attached are the tables that are views over Dir already.
	attached map[string]bool
}

// Attach makes every table of Tables that has files under a.Dir, and is
// not attached yet, a view of the same name and columns over them (the
// schema's own views, node_reputation for one, then read the archive). It
// returns the tables it attached this time. Call it again to pick up a
// table's first files; later files of an attached table are read by the
// next query without it.
func (a *Attacher) Attach(ctx context.Context, st *duck.Store) ([]string, error) {
	if a.attached == nil {
		a.attached = map[string]bool{}
	}
	var now []string
	for _, t := range Tables {
		if a.attached[t] {
			continue
		}
		files, err := filepath.Glob(a.glob(t))
		if err != nil {
			return now, err
		}
		if len(files) == 0 {
			continue
		}
		var views int
		if err := st.Conn().QueryRowContext(ctx, "SELECT count(*) FROM duckdb_views() WHERE view_name = ? AND NOT internal", t).Scan(&views); err != nil {
			return now, fmt.Errorf("attach %s: %w", t, err)
		}
		drop := "DROP TABLE IF EXISTS " + t
		if views > 0 {
			drop = "DROP VIEW IF EXISTS " + t
		}
		if err := st.Exec(ctx, drop); err != nil {
			return now, fmt.Errorf("attach %s: %w", t, err)
		}
		src := fmt.Sprintf("(SELECT * EXCLUDE (%s, %s) FROM read_parquet(%s, hive_partitioning = true, union_by_name = true))",
			DayColumn, RunColumn, duck.Literal(a.glob(t)))
		sel := "SELECT * FROM " + src
		if t == "analysis_window" {
			// rk numbers (run, rank) within one database; runs archived
			// from several would share numbers, so number them again
			sel = "SELECT run_id, rank, step_lo, step_hi, (dense_rank() OVER (ORDER BY run_id, rank))::INTEGER AS rk FROM " + src
		}
		q := fmt.Sprintf("CREATE VIEW %s AS %s", t, sel)
		if err := st.Exec(ctx, q); err != nil {
			return now, fmt.Errorf("attach %s: %w", t, err)
		}
		a.attached[t] = true
		now = append(now, t)
	}
	return now, nil
}

// Attached says whether table t reads the archive.
func (a *Attacher) Attached(t string) bool { return a.attached[t] }

func (a *Attacher) glob(t string) string {
	return filepath.Join(a.Dir, t, DayColumn+"=*", RunColumn+"=*", "*.parquet")
}

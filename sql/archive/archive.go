package archive

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

// Tables are the tables a run leaves in the archive: its events, as
// duck.ExportTables lists them, what its analysis found, and the serve
// scheduler's record of the pass (analyses), with the step window the
// analysis used (analysis_window, which views over the events join).
// slices is kept as the two
// tables it is made of, slices_core and slices_detail, so that the
// schema's views over slices_detail (rank_steps, node_outcomes' links,
// ...) read the archive too; the schema's slices view joins them again.
var Tables = tables()

func tables() []string {
	var out []string
	for _, t := range duck.ExportTables {
		if t == "slices" {
			out = append(out, "slices_core", "slices_detail")
			continue
		}
		out = append(out, t)
	}
	return append(out, "kernel_metrics", "root_causes", "analyses", "analysis_window")
}

// Partition columns every archived file's path adds to its rows.
const (
	DayColumn = "day" // the run's day (UTC): its first event, or when it was analysed
	RunColumn = "run" // the run's path token (stream.RunPathToken)
)

// Written says what WriteRun wrote.
type Written struct {
	Day   string
	Files int
	Bytes int64
	// Paths are the files written, Removed the folders of the run's
	// earlier files removed (a table it no longer has rows in, or another
	// day), both relative to the archive folder with forward slashes.
	Paths, Removed []string
}

// WriteRun writes run's rows of every table in Tables from st under dir,
// replacing what an earlier analysis of run wrote there (on any day). The
// day is the UTC day of the run's first event when the trace gives wall
// clock times, else at's.
func WriteRun(ctx context.Context, st *duck.Store, dir, run string, at time.Time) (Written, error) {
	var w Written
	day, err := runDay(ctx, st, run, at)
	if err != nil {
		return w, err
	}
	w.Day = day
	// row order means nothing in the archive; keeping it doubles COPY's
	// memory and time (syn8's slices: 583 -> 318 MB, 3.0 -> 1.6 s)
	if err := st.Exec(ctx, "SET preserve_insertion_order = false"); err != nil {
		return w, err
	}
	defer st.Exec(context.WithoutCancel(ctx), "RESET preserve_insertion_order")
	tok := stream.RunPathToken(run)
	cut := strings.Contains(tok, "~")
	// before this version a run's folder was named by its subject token,
	// which x/y, x.y and x_y share
	legacy := stream.RunToken(run)
	for _, t := range Tables {
		final := filepath.Join(dir, t, DayColumn+"="+day, RunColumn+"="+tok, "data_0.parquet")
		// an earlier analysis may have placed the run on another day, or
		// in its folder of old
		old, _ := filepath.Glob(filepath.Join(dir, t, DayColumn+"=*", RunColumn+"="+tok))
		if legacy != tok {
			more, _ := filepath.Glob(filepath.Join(dir, t, DayColumn+"=*", RunColumn+"="+legacy))
			old = append(old, more...)
		}
		for _, o := range old {
			if filepath.Dir(final) == o {
				continue
			}
			// a folder of another run's rows is that run's: one named by
			// the old token (x_y's, when this is x/y), or a cut token's
			// twin (refused below when it is this day's)
			other, err := otherRun(ctx, st, o, run)
			if err != nil {
				return w, fmt.Errorf("archive %s: %w", t, err)
			}
			if other {
				continue
			}
			if err := os.RemoveAll(o); err != nil {
				return w, fmt.Errorf("archive %s: %w", t, err)
			}
			w.Removed = append(w.Removed, rel(dir, o))
		}
		if cut {
			// a cut token is a hash: never replace another run's files
			if other, err := otherRun(ctx, st, filepath.Dir(final), run); err != nil {
				return w, fmt.Errorf("archive %s: %w", t, err)
			} else if other {
				return w, fmt.Errorf("archive %s: the folder %s holds another run's rows; run %q's id hashes as theirs, so it is not archived", t, rel(dir, filepath.Dir(final)), run)
			}
		}
		var n int64
		if err := st.Conn().QueryRowContext(ctx, "SELECT count(*) FROM "+t+" WHERE run_id = ?", run).Scan(&n); err != nil {
			return w, fmt.Errorf("archive %s: %w", t, err)
		}
		if n == 0 {
			if _, err := os.Stat(filepath.Dir(final)); err == nil {
				if err := os.RemoveAll(filepath.Dir(final)); err != nil {
					return w, fmt.Errorf("archive %s: %w", t, err)
				}
				w.Removed = append(w.Removed, rel(dir, filepath.Dir(final)))
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
			return w, fmt.Errorf("archive %s: %w", t, err)
		}
		tmp := final + ".tmp"
		q := fmt.Sprintf("COPY (SELECT * FROM %s WHERE run_id = %s) TO %s (FORMAT parquet, COMPRESSION zstd)",
			t, duck.Literal(run), duck.Literal(tmp))
		if err := st.Exec(ctx, q); err != nil {
			os.Remove(tmp)
			return w, fmt.Errorf("archive %s of run %s: %w", t, run, err)
		}
		if err := os.Rename(tmp, final); err != nil {
			os.Remove(tmp)
			return w, fmt.Errorf("archive %s: %w", t, err)
		}
		if fi, err := os.Stat(final); err == nil {
			w.Bytes += fi.Size()
		}
		w.Files++
		w.Paths = append(w.Paths, rel(dir, final))
	}
	return w, nil
}

// otherRun says whether the archive folder dir holds rows of a run other
// than run (false when it holds no files).
func otherRun(ctx context.Context, st *duck.Store, dir, run string) (bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil || len(files) == 0 {
		return false, err
	}
	var n int64
	q := fmt.Sprintf("SELECT count(*) FROM (SELECT 1 FROM read_parquet(%s, hive_partitioning = false) WHERE run_id IS DISTINCT FROM ? LIMIT 1)",
		duck.Literal(filepath.Join(dir, "*.parquet")))
	if err := st.Conn().QueryRowContext(ctx, q, run).Scan(&n); err != nil {
		return false, fmt.Errorf("the runs in %s: %w", dir, err)
	}
	return n > 0, nil
}

// rel is path relative to dir, with forward slashes (an object key).
func rel(dir, path string) string {
	r, err := filepath.Rel(dir, path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(r)
}

// runDay is run's day as the archive names it.
func runDay(ctx context.Context, st *duck.Store, run string, at time.Time) (string, error) {
	var start *int64
	err := st.Conn().QueryRowContext(ctx, "SELECT min(start_ns) FILTER (WHERE start_ns > 0) FROM runs WHERE run_id = ?", run).Scan(&start)
	if err != nil {
		return "", fmt.Errorf("archive: the run's day: %w", err)
	}
	t := at.UTC()
	// a trace's clock is the wall clock when it is after 2000 and not
	// after tomorrow; otherwise (a clock since boot) the analysis day
	if start != nil {
		if s := time.Unix(0, *start).UTC(); s.Year() >= 2000 && s.Before(at.Add(24*time.Hour)) {
			t = s
		}
	}
	return t.Format(time.DateOnly), nil
}

package analyze

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/sql/archive"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

// archiveRuns adds every run in st to the fleet archive (serve.archive).
func archiveRuns(ctx context.Context, cfg *config.Config, st *duck.Store, errOut io.Writer, quiet bool) error {
	staging, err := os.MkdirTemp("", "trainscope-archive-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	dir, upload, err := cfg.ArchiveTarget(staging)
	if err != nil {
		return err
	}
	rows, err := st.Query(ctx, "SELECT run_id FROM runs ORDER BY run_id")
	if err != nil {
		return err
	}
	var runs []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			rows.Close()
			return err
		}
		runs = append(runs, r)
	}
	rows.Close()
	for _, r := range runs {
		w, err := archive.WriteRun(ctx, st, dir, r, time.Now())
		if err == nil && upload != nil {
			err = upload(ctx, dir, w)
		}
		if err != nil {
			return err
		}
		if !quiet {
			fmt.Fprintf(errOut, "archive: run %s, %d files (%.1f MB) in %s\n", r, w.Files, float64(w.Bytes)/1e6,
				strings.TrimRight(cfg.Serve.Archive, "/")+"/*/day="+w.Day+"/run="+stream.RunPathToken(r))
		}
	}
	return nil
}

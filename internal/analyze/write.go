package analyze

import (
	"fmt"
	"io"
	"os"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/detectors/report/html"
	"github.com/trainscope/trainscope/internal/cli"
)

// reportFormats are the --format values of the commands that write a
// report.
const reportFormats = "md, json or html"

// checkFormat is the usage error for a --format that is not one of
// reportFormats.
func checkFormat(cmd, format string) error {
	switch format {
	case "md", "json", "html":
		return nil
	}
	return cli.Usage(fmt.Sprintf("%s: --format %q: want %s", cmd, format, reportFormats))
}

// WriteReport writes rep as markdown (one screen, or with every table
// and finding when full), JSON or HTML to path, or to out when path is
// empty.
func WriteReport(rep *report.Report, format string, full bool, path string, out io.Writer) error {
	return writeTo(path, out, func(w io.Writer) error {
		switch {
		case format == "json":
			return rep.WriteJSON(w)
		case format == "html":
			return html.Write(w, rep)
		case full:
			return rep.WriteMarkdownFull(w)
		}
		return rep.WriteMarkdown(w)
	})
}

// writeAudit writes an audit report as markdown, JSON or HTML.
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

// writeTo runs write on the file at path (created or truncated), or on out
// when path is empty; a failed close (a full disk) is an error too.
func writeTo(path string, out io.Writer, write func(io.Writer) error) error {
	if path == "" {
		return write(out)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
